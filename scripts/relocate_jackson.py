#!/usr/bin/env python3
"""Build a jar with Jackson relocated to org.apache.iceberg.shaded.com.fasterxml.jackson.

The iceberg-spark-runtime jar shipped in the PyPI package snowpark-connect-deps-iceberg
lacks the shaded Jackson classes that the official Apache Iceberg runtime bundles.
This rewrites the constant pools of pyspark's own jackson-{core,databind,annotations}
classes (pure byte-level relocation, like maven-shade) so the runtime jar works.
scripts/iceberg-jars runs it once, for the REST catalogs the tests start and for the Spark
writers (benches/bench-table, tests/gen).

usage: relocate_jackson.py OUT.jar IN1.jar [IN2.jar ...]
"""
import struct, sys, zipfile

OLD_SLASH, NEW_SLASH = b"com/fasterxml/jackson/", b"org/apache/iceberg/shaded/com/fasterxml/jackson/"
OLD_DOT, NEW_DOT = b"com.fasterxml.jackson.", b"org.apache.iceberg.shaded.com.fasterxml.jackson."


def reloc_bytes(b):
    return b.replace(OLD_SLASH, NEW_SLASH).replace(OLD_DOT, NEW_DOT)


def reloc_class(data):
    assert data[:4] == b"\xca\xfe\xba\xbe"
    n = struct.unpack(">H", data[8:10])[0]
    out = bytearray(data[:10])
    i, k = 10, 1
    while k < n:
        tag = data[i]
        if tag == 1:
            ln = struct.unpack(">H", data[i + 1:i + 3])[0]
            s = reloc_bytes(data[i + 3:i + 3 + ln])
            out += bytes([1]) + struct.pack(">H", len(s)) + s
            i += 3 + ln
        elif tag in (3, 4, 9, 10, 11, 12, 17, 18):
            out += data[i:i + 5]; i += 5
        elif tag in (5, 6):
            out += data[i:i + 9]; i += 9; k += 1
        elif tag in (7, 8, 16, 19, 20):
            out += data[i:i + 3]; i += 3
        elif tag == 15:
            out += data[i:i + 4]; i += 4
        else:
            raise ValueError("bad constant tag %d" % tag)
        k += 1
    out += data[i:]
    return bytes(out)


def main():
    out, ins = sys.argv[1], sys.argv[2:]
    seen = set()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zo:
        for jar in ins:
            with zipfile.ZipFile(jar) as zi:
                for name in zi.namelist():
                    if name.endswith("/") or "module-info" in name or name.startswith("META-INF/versions/"):
                        continue
                    if name.upper().startswith("META-INF/") and not name.startswith("META-INF/services/"):
                        continue
                    data = zi.read(name)
                    newname = reloc_bytes(name.encode()).decode()
                    if name.endswith(".class"):
                        data = reloc_class(data)
                    elif name.startswith("META-INF/services/"):
                        data = reloc_bytes(data)
                    if newname in seen:
                        continue
                    seen.add(newname)
                    zo.writestr(newname, data)
    print("wrote", out, len(seen), "entries")


if __name__ == "__main__":
    main()
