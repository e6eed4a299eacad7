#!/usr/bin/env python3
"""Independent check for tests/grammar/schema_property_test.cpp: validates generated JSON texts
against their schemas with python-jsonschema (Draft 2020-12, format checks where the library has
them). Input: JSON lines {"i": n, "schema": {...}, "text": "..."}. Prints one line per failure and
a summary; exit 0 when all validate, 1 otherwise, 77 when jsonschema is missing and cannot be
installed (apt-get install python3-jsonschema, as root)."""
import json
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    try:
        subprocess.run(["apt-get", "install", "-y", "-q", "python3-jsonschema"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import jsonschema  # noqa: F811
    except Exception:  # no root, no network: the caller skips
        print("python3-jsonschema is not installed and could not be installed")
        sys.exit(77)


def main(path):
    checked = failed = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            checked += 1
            try:
                instance = json.loads(case["text"])
            except ValueError as e:
                failed += 1
                print(f"FAIL {case['i']}: not JSON ({e}): {case['text']!r}")
                continue
            validator = jsonschema.Draft202012Validator(case["schema"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
            errors = list(validator.iter_errors(instance))
            if errors:
                failed += 1
                print(f"FAIL {case['i']}: {errors[0].message} | text {case['text']!r} | schema {json.dumps(case['schema'])}")
    print(f"checked {checked} failed {failed}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
