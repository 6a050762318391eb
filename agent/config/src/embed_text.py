#!/usr/bin/env python3
"""Writes a C++ header holding a text file as a std::string_view constant.

usage: embed_text.py INPUT OUTPUT NAME
"""
import sys

src, dst, name = sys.argv[1:4]
with open(src, encoding="utf-8") as f:
    text = f.read()
delimiter = "zcal_embed"
if ")" + delimiter + '"' in text:
    sys.exit(f"{src}: contains the raw-string delimiter; change it here")
with open(dst, "w", encoding="utf-8") as f:
    f.write(f"// Generated from {src} by embed_text.py; do not edit.\n")
    f.write("#pragma once\n#include <string_view>\n")
    f.write(f'inline constexpr std::string_view {name} = R"{delimiter}(')
    f.write(text)
    f.write(f'){delimiter}";\n')
