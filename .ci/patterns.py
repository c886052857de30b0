#!/usr/bin/env python3
"""Compiles every `pattern` of an OpenAPI document with Python's re.

The service compiles its patterns with Go's RE2 (santhosh-tekuri/jsonschema)
and kin-openapi; partners' validators use other engines. Python's re is a
second one that refuses what many of them refuse (\\p{...} classes, for
one), so a pattern that passes here and in Go is one a mainstream validator
compiles. Walks the whole document: schema components, parameters, the
schemas inside responses and request bodies. Prints each pattern that does
not compile with where it is, and exits 1 if any; else prints how many
compiled.

Usage: python3 .ci/patterns.py openapi.json
"""
import json
import re
import sys


def walk(node, path, found):
    if isinstance(node, dict):
        for key, value in node.items():
            # A member named "pattern" inside "properties" is a property,
            # not a keyword.
            if key == "pattern" and isinstance(value, str) and path[-1:] != ["properties"]:
                found.append(("/".join(path + [key]), value))
            walk(value, path + [key], found)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            walk(value, path + [str(i)], found)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: patterns.py openapi.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    found = []
    walk(doc, [""], found)
    bad = 0
    for where, pattern in found:
        try:
            re.compile(pattern)
        except re.error as e:
            print(f"{where}: {pattern!r} does not compile with Python's re: {e}")
            bad += 1
    if bad:
        sys.exit(1)
    print(f"{len(found)} patterns compile with Python's re")


if __name__ == "__main__":
    main()
