"""The markdown a Discord message must respect: scanning, cut points, tables, tokens, code, graphemes.

Pure text knowledge shared by the flusher (stage 05) and the splitter (stage 07); no stream here.
"""
