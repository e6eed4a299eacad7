#!/usr/bin/env python3
"""Independent JSON Schema check for tests/server/constrained_invariants_test.cpp.

Reads JSON lines {"schema": {...}, "text": "..."} on stdin and prints one line per input: "ok", or
"invalid: <reason>" (the text is not JSON, or it does not validate). Validation is python3-jsonschema
(Draft 2020-12, the Debian package); when it is missing the script installs it with apt-get, and
exits 77 when it still cannot be imported (the test then skips with that line). Integers are
compared exactly (Python's json keeps big integers exact).
"""
import json
import os
import subprocess
import sys


def load_jsonschema():
    try:
        import jsonschema  # noqa: F401
        return jsonschema
    except ImportError:
        pass
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", "python3-jsonschema"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    try:
        import jsonschema  # noqa: F401
        return jsonschema
    except ImportError:
        print("python3-jsonschema is not installed and apt-get could not install it", file=sys.stderr)
        sys.exit(77)


def reject_constant(name):
    raise ValueError("not JSON: " + name)


def main():
    jsonschema = load_jsonschema()
    validator_cls = getattr(jsonschema, "Draft202012Validator", None) or jsonschema.Draft7Validator
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        try:
            instance = json.loads(case["text"], parse_constant=reject_constant)
        except ValueError as e:
            print("invalid: not JSON (%s)" % str(e).replace("\n", " ")[:200])
            continue
        errors = sorted(validator_cls(case["schema"]).iter_errors(instance), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            print("invalid: at %s: %s" % (list(e.path), e.message.replace("\n", " ")[:200]))
        else:
            print("ok")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
