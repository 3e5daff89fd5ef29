#!/usr/bin/env python3
"""Reads every Parquet file below a logstore output whole, rows, dead letters
and all, with pyarrow verifying each page's CRC (parquet-go writes them), and
prints what it found as JSON: {"files": N, "rows": N, "corrupt": {path: why}}.
A file that a crash, a full disk or a retried write left torn does not read
back. The chaos suite's judge runs it after scripts/verify_dataset.py.

    scripts/chaos/checkfiles.py DIR|s3://BUCKET/PREFIX

For s3:// the endpoint and credentials come from the standard
AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
"""
import json
import os
import sys

import pyarrow.fs as pafs
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from verify_dataset import filesystem  # noqa: E402


def main():
    fs, root = filesystem(sys.argv[1])
    if fs is None:
        fs = pafs.LocalFileSystem()
    found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    files, rows, corrupt = 0, 0, {}
    for info in found:
        if info.type != pafs.FileType.File or not info.path.endswith(".parquet"):
            continue
        files += 1
        try:
            with fs.open_input_file(info.path) as f:
                rows += pq.read_table(f, page_checksum_verification=True).num_rows
        except Exception as e:  # any failure to read it back is the finding
            corrupt[info.path] = str(e)
    json.dump({"files": files, "rows": rows, "corrupt": corrupt}, sys.stdout)


if __name__ == "__main__":
    main()
