#!/usr/bin/env python3
"""The llama.cpp comparison once per CPU kernel table: ANELM_FORCE_ISA=avx2, avx512, and the native choice.

Usage: bench/isa_matrix.py [--isas avx2,avx512,native] [--out FILE] [compare_llamacpp.py flags...]
  e.g. bench/isa_matrix.py --anelm build/anelm --shape qwen3-0.6b --dtypes Q4_K_M,Q5_K_M --rounds 2

Runs bench/compare_llamacpp.py (interleaved rounds, ratios per round) with each table forced in turn, so
a speed claim says which table it holds for. Tables this CPU cannot run are skipped and listed (anelm
would silently fall back to the native one); each run's `anelm bench` reports the table it really
used, which is checked. llama.cpp runs at the same ISA level: node-llama-cpp ships one CPU variant
per level (libggml-cpu-<name>.so) and ggml loads the best one the CPU runs among those it finds, so
for a forced table llama.cpp runs from a mirror of its library directory (symbolic links, in a
temporary directory) that holds only the variants at that level (avx2: haswell and below; avx512:
all but sapphirerapids, the AMX one). --native-peer keeps llama.cpp's own choice throughout. Prints
one JSON document: the CPU model, its SIMD flags, the load average before and after each run, the
peer variants offered, and per table the median ratios.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

from benchutil import emit_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE = os.path.join(ROOT, "bench", "compare_llamacpp.py")

# What each forced table needs from /proc/cpuinfo (mirrors engine/kernels/isa.cpp).
NEEDS = {"avx2": {"avx2", "fma", "f16c"},
         "avx512": {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"},
         "amx": {"avx512f", "avx512_vnni", "amx_tile", "amx_int8"}}


# llama.cpp's CPU variants at or below each forced table's ISA level (alderlake adds AVX-VNNI, which
# anelm's avx2 table does not use).
AVX2_LEVEL = {"x64", "sse42", "sandybridge", "ivybridge", "piledriver", "haswell"}
PEER_LEVEL = {"avx2": lambda name: name in AVX2_LEVEL, "avx512": lambda name: name != "sapphirerapids"}
PEER_LIBS = os.path.join("node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")


def peer_at_level(isa, tmp):
    """A llamacpp-bench that finds only the CPU variants at `isa`'s level, and their names; (None, None)
    when the peer install is not where the kit puts it."""
    peer_dir = os.environ.get("ANELM_PEER_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "anelm-peer")
    binary, libs = os.path.join(peer_dir, "bin", "llamacpp-bench"), os.path.join(peer_dir, PEER_LIBS)
    if isa not in PEER_LEVEL or not os.path.isfile(binary) or not os.path.isdir(libs):
        return None, None
    root = os.path.join(tmp, isa)
    os.makedirs(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, PEER_LIBS))
    shutil.copy2(binary, os.path.join(root, "bin"))  # a copy: its RUNPATH is $ORIGIN/../node_modules/...
    offered = []
    for name in sorted(os.listdir(libs)):
        if name.startswith("libggml-cpu-") and name.endswith(".so"):
            variant = name[len("libggml-cpu-"):-len(".so")]
            if not PEER_LEVEL[isa](variant):
                continue
            offered.append(variant)
        os.symlink(os.path.join(libs, name), os.path.join(root, PEER_LIBS, name))
    return os.path.join(root, "bin", "llamacpp-bench"), offered


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
    ap.add_argument("--native-peer", action="store_true",
                    help="llama.cpp picks its own CPU variant in every run (not the forced table's level)")
    a, passthrough = ap.parse_known_args()
    model, flags = cpu_info()
    simd = sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c")))
    report = {"tool": "anelm-isa-matrix", "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "cpu_model": model, "cpu_simd_flags": simd, "compare_args": passthrough, "runs": [], "skipped": []}
    tmp = tempfile.mkdtemp(prefix="anelm-isa-matrix-")
    try:
        run_tables(a, passthrough, flags, report, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    emit_report(report, a.out)


def run_tables(a, passthrough, flags, report, tmp):
    for isa in [s.strip() for s in a.isas.split(",") if s.strip()]:
        env = dict(os.environ)
        env.pop("ANELM_FORCE_ISA", None)
        if isa != "native":
            missing = sorted(NEEDS.get(isa, {isa}) - flags)
            if missing:
                report["skipped"].append({"isa": isa, "missing_cpu_flags": missing})
                continue
            env["ANELM_FORCE_ISA"] = isa
        peer_args, offered = [], None
        if isa != "native" and not a.native_peer:
            peer, offered = peer_at_level(isa, tmp)
            if peer is not None:
                peer_args = ["--peer", peer]
        load_before = os.getloadavg()[0]
        proc = subprocess.run([sys.executable, COMPARE] + passthrough + peer_args, env=env, capture_output=True,
                              text=True)
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
        run = {"isa": isa, "anelm_isa_used": used, "llamacpp_cpu_variants_offered": offered or "all",
               "loadavg_1m_before": round(load_before, 2),
               "loadavg_1m_after": round(load_after, 2), "membw_read_gb_s": result.get("membw_read_gb_s"),
               "summary": summary, "compare": result}
        if isa != "native" and used != [isa]:
            run["warning"] = f"forced {isa} but anelm reported {used}"
        report["runs"].append(run)


if __name__ == "__main__":
    main()
