#!/usr/bin/python3
"""Writes a corpus of hostile .tar.gz files for tests/storage/run.sh.

  gen_hostile.py OUTDIR SENTINEL

SENTINEL is an absolute directory outside the extraction target (next to
it) holding a file "file"; every archive tries to create or change
something there, or to smuggle in something the policy refuses.  Prints one
line per archive: "<name>\t<substring the error must contain>".
Limits the suite runs them with: 4 MiB bytes, 1000 entries, ratio 50
beyond 1 MiB.
"""
import gzip
import io
import os
import sys
import tarfile


def build(path, entries, fmt=tarfile.PAX_FORMAT, raw_tail=None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for info, data in entries:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    raw = buf.getvalue()
    if raw_tail is not None:
        raw = raw_tail(raw)
    with open(path, "wb") as f:
        f.write(gzip.compress(raw, mtime=0))


def reg(name, data=b"pwned\n", mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = mode
    return ti, data


def sym(name, target):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.SYMTYPE
    ti.linkname = target
    return ti, None


def hard(name, target):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.LNKTYPE
    ti.linkname = target
    return ti, None


def dirent(name, mode=0o755):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.DIRTYPE
    ti.mode = mode
    return ti, None


def special(name, kind):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.devmajor, ti.devminor = 1, 3
    return ti, None


def main():
    out, sentinel = sys.argv[1], sys.argv[2]
    rel = "../" + os.path.basename(sentinel)  # the sentinel seen from the target
    os.makedirs(out, exist_ok=True)
    cases = {
        # name: (entries, expected error substring)
        "abs_path": ([reg("ok.txt", b"fine\n"), reg(sentinel + "/pwned")], "unsafe path"),
        "dotdot": ([reg(rel + "/pwned")], "unsafe path"),
        "dotdot_inner": ([dirent("a"), reg("a/../../" + os.path.basename(sentinel) + "/pwned")], "unsafe path"),
        "symlink_write_through": ([sym("evil", sentinel), reg("evil/pwned")], "symlink"),
        "symlink_parent_dir": ([dirent("d"), sym("d/sub", "../" + rel), dirent("d/sub/x"),
                                reg("d/sub/x/pwned")], "symlink"),
        "symlink_relative_escape": ([sym("up", rel), reg("up/file", b"changed\n")], "symlink"),
        "dup_replaces_symlink": ([sym("f", sentinel + "/file"), reg("f", b"changed\n")], "duplicate"),
        "dup_dir_then_symlink": ([dirent("d"), sym("d", sentinel), reg("d/pwned")], "duplicate"),
        "hardlink_etc_passwd": ([hard("passwd", "/etc/passwd")], "hard link"),
        "hardlink_outside_rel": ([hard("x", rel + "/file")], "hard link"),
        "hardlink_to_symlink": ([sym("s", sentinel + "/file"), hard("h", "s")], "hard link"),
        "char_device": ([special("null", tarfile.CHRTYPE)], "device"),
        "block_device": ([special("sda", tarfile.BLKTYPE)], "device"),
        "fifo": ([special("pipe", tarfile.FIFOTYPE)], "device, fifo"),
        "setuid": ([reg("suid", b"#!/bin/sh\n", 0o4755)], "setuid"),
        "setgid_dir": ([dirent("g", 0o2775)], "setuid"),
        "oversized_total": ([reg("big%d" % i, os.urandom(1 << 20)) for i in range(5)], "size limit"),
        "too_many_entries": ([reg("f%04d" % i, b"") for i in range(1100)], "too many entries"),
        "gzip_bomb": ([reg("zeros", bytes(3 << 20))], "ratio"),
        "long_name": ([reg("x" * 300)], "unsafe path"),
        "too_deep": ([reg("/".join(["d"] * 300) + "/f")], "unsafe path"),
        # A NUL ends the name in every tar header format: libarchive reads
        # "ok", a harmless in-tree name.  The test is that it stays inside.
        "nul_in_name": ([reg("ok\x00/../../" + os.path.basename(sentinel) + "/pwned")], "CONTAINED"),
        "truncated": ([reg("a", os.urandom(10000))], "corrupt"),
        "empty_symlink_target": ([sym("e", "")], "symlink target"),
    }
    for name, (entries, needle) in cases.items():
        tail = (lambda raw: raw[:6000]) if name == "truncated" else None
        try:
            build(os.path.join(out, name + ".tar.gz"), entries, raw_tail=tail)
        except (ValueError, tarfile.TarError) as e:
            print("# cannot build %s: %s" % (name, e), file=sys.stderr)
            continue
        print("%s\t%s" % (name, needle))


if __name__ == "__main__":
    main()
