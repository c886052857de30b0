"""Sends a PUT with its whole body before reading the answer, as Python's
http.client does, N times on N connections, and prints one line per try:
the status and the problem type, or the error that lost the answer.

Usage: body_first.py URL KEY BYTES N
"""
import http.client
import json
import sys
import urllib.parse

url, key, size, tries = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
u = urllib.parse.urlsplit(url)
body = b"{" + b" " * (size - 2) + b"}"
for _ in range(tries):
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request("PUT", u.path, body=body, headers={
            "Authorization": "Bearer " + key,
            "Content-Type": "application/json",
            "Idempotency-Key": "m1",
        })
        res = conn.getresponse()
        problem = json.loads(res.read())
        print(res.status, problem.get("type"))
    except Exception as e:  # the answer was lost: say how
        print("error", type(e).__name__, e)
    finally:
        conn.close()
