"""What the bench scripts that start `anelm serve` or write a JSON report share."""
import http.client, json, time


def wait_healthy(port, seconds=60.0):
    """Returns once GET /health on 127.0.0.1:port answers 200; exits the script after `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    raise SystemExit(f"anelm serve (port {port}) did not become ready in {seconds:.0f} s")


def emit_report(report, out=""):
    """Prints the report as JSON and writes it to `out` too when given."""
    text = json.dumps(report, indent=1)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    print(text)
