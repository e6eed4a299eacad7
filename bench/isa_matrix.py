#!/usr/bin/env python3
"""The llama.cpp comparison once per CPU kernel table: ANELM_FORCE_ISA=avx2, avx512, and the native choice.

Usage: bench/isa_matrix.py [--isas avx2,avx512,native] [--out FILE] [compare_llamacpp.py flags...]
  e.g. bench/isa_matrix.py --anelm build/anelm --shape qwen3-0.6b --dtypes Q4_K_M,Q5_K_M --rounds 2

Runs bench/compare_llamacpp.py (interleaved rounds, ratios per round) with each table forced in turn, so
a speed claim says which table it holds for. Tables this CPU cannot run are skipped and listed (anelm
would silently fall back to the native one); each run's `anelm bench` reports the table it really
used, which is checked. llama.cpp picks its own CPU variant (libggml-cpu-<level>.so) for the machine
in every run: its figures are the native ones throughout. Prints one JSON document: the CPU model,
its SIMD flags, the load average before and after each run, and per table the median ratios.
"""
import argparse, json, os, subprocess, sys, time

from benchutil import emit_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE = os.path.join(ROOT, "bench", "compare_llamacpp.py")

# What each forced table needs from /proc/cpuinfo (mirrors engine/kernels/isa.cpp).
NEEDS = {"avx2": {"avx2", "fma", "f16c"},
         "avx512": {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"},
         "amx": {"avx512f", "avx512_vnni", "amx_tile", "amx_int8"}}


def cpu_info():
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model == "unknown":
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return model, flags


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--isas", default="avx2,avx512,native",
                    help="tables to force, in order; 'native' leaves ANELM_FORCE_ISA unset")
    ap.add_argument("--out", default="", help="also write the JSON document here")
    a, passthrough = ap.parse_known_args()
    model, flags = cpu_info()
    simd = sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c")))
    report = {"tool": "anelm-isa-matrix", "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "cpu_model": model, "cpu_simd_flags": simd, "compare_args": passthrough, "runs": [], "skipped": []}
    for isa in [s.strip() for s in a.isas.split(",") if s.strip()]:
        env = dict(os.environ)
        env.pop("ANELM_FORCE_ISA", None)
        if isa != "native":
            missing = sorted(NEEDS.get(isa, {isa}) - flags)
            if missing:
                report["skipped"].append({"isa": isa, "missing_cpu_flags": missing})
                continue
            env["ANELM_FORCE_ISA"] = isa
        load_before = os.getloadavg()[0]
        proc = subprocess.run([sys.executable, COMPARE] + passthrough, env=env, capture_output=True, text=True)
        load_after = os.getloadavg()[0]
        if proc.returncode != 0:
            report["runs"].append({"isa": isa, "error": proc.stderr.strip()[-2000:]})
            continue
        result = json.loads(proc.stdout)
        used = sorted({m.get("anelm_isa") or "?" for m in result.get("models", [])})
        summary = [{k: m.get(k) for k in ("model", "prefill_ratio_median", "prefill_ratio_range", "decode_ratio_median",
                                          "decode_ratio_range", "anelm_prefill_tok_s", "llamacpp_prefill_tok_s",
                                          "anelm_decode_tok_s", "llamacpp_decode_tok_s", "decode_ceiling_tok_s",
                                          "loadavg_1m")}
                   for m in result.get("models", [])]
        run = {"isa": isa, "anelm_isa_used": used, "loadavg_1m_before": round(load_before, 2),
               "loadavg_1m_after": round(load_after, 2), "membw_read_gb_s": result.get("membw_read_gb_s"),
               "summary": summary, "compare": result}
        if isa != "native" and used != [isa]:
            run["warning"] = f"forced {isa} but anelm reported {used}"
        report["runs"].append(run)
    emit_report(report, a.out)


if __name__ == "__main__":
    main()
