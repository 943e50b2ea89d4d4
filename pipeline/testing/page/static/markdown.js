// Discord-flavoured markdown for the rxcord emulator page, rendered straight into DOM nodes
// (text is never parsed as HTML, so a message cannot inject markup).
//
// Rules follow Discord's parser (simple-markdown with Discord's own rules) as far as they
// are known: line-start rules (block quotes "> " and ">>> ", headings "# " to "### ",
// subtext "-# ", lists "- " / "* " / "1. ") and inline rules (code blocks, inline code,
// escapes, spoilers, mentions, custom emoji, timestamps, links, bold, underline, italics,
// strikethrough). Differences that remain are listed in docs/decisions.md. plainText gives the
// one-line text a reply preview shows.
(function (global) {
  "use strict";

  function el(tag, className, children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children || []) {
      node.append(child);
    }
    return node;
  }

  function text(value) {
    return document.createTextNode(value);
  }

  // -- line-start (block) rules ---------------------------------------------------

  const QUOTE_ALL = /^>>> ([\s\S]*)$/;
  const QUOTE_LINE = /^> ([^\n]*)(?:\n|$)/;
  const HEADING = /^(#{1,3}) +(?=\S)([^\n]*?)[ \t]*(?:\n|$)/;
  const SUBTEXT = /^-# +(?=\S)([^\n]*?)[ \t]*(?:\n|$)/;
  const LIST_ITEM = /^( *)([-*]|\d{1,9}\.) +(?=\S)([^\n]*)(?:\n|$)/;

  function parseQuote(src, ctx) {
    let match = QUOTE_ALL.exec(src);
    if (match) {
      return [el("blockquote", "md-quote", parse(match[1], { ...ctx, quote: false })), match[0].length];
    }
    match = QUOTE_LINE.exec(src);
    if (!match) return null;
    const lines = [];
    let used = 0;
    while (match) {
      lines.push(match[1]);
      used += match[0].length;
      match = QUOTE_LINE.exec(src.slice(used));
    }
    return [el("blockquote", "md-quote", parse(lines.join("\n"), { ...ctx, quote: false })), used];
  }

  function parseList(src, ctx) {
    let match = LIST_ITEM.exec(src);
    if (!match) return null;
    let used = 0;
    const stack = [];
    let root = null;
    while (match) {
      const indent = match[1].length;
      const ordered = match[2] !== "-" && match[2] !== "*";
      while (stack.length > 1 && indent < stack[stack.length - 1].indent) stack.pop();
      let top = stack[stack.length - 1];
      if (!top || (indent > top.indent && top.list.lastElementChild)) {
        const list = el(ordered ? "ol" : "ul", "md-list");
        if (ordered) list.start = parseInt(match[2], 10);
        if (top) top.list.lastElementChild.append(list);
        else root = list;
        top = { indent, list };
        stack.push(top);
      }
      top.list.append(el("li", null, parse(match[3], { ...ctx, blocks: false })));
      used += match[0].length;
      match = LIST_ITEM.exec(src.slice(used));
    }
    return [root, used];
  }

  function parseLineStart(src, ctx) {
    if (ctx.quote !== false) {
      const quote = parseQuote(src, ctx);
      if (quote) return quote;
    }
    let match = HEADING.exec(src);
    if (match) {
      const level = match[1].length;
      return [el("h" + level, "md-heading md-h" + level, parse(match[2], { ...ctx, blocks: false })), match[0].length];
    }
    match = SUBTEXT.exec(src);
    if (match) {
      return [el("small", "md-subtext", parse(match[1], { ...ctx, blocks: false })), match[0].length];
    }
    return parseList(src, ctx);
  }

  // -- inline rules ---------------------------------------------------------------

  const CODE_BLOCK = /^```(?:([A-Za-z0-9_+\-.#]+?)\n)?\n*([^\n][\s\S]*?)\n*```\n?/;
  const INLINE_CODE = /^(`+)([\s\S]*?[^`])\1(?!`)/;
  const ESCAPE = /^\\([^0-9A-Za-z\s])/;
  const SPOILER = /^\|\|([\s\S]+?)\|\|/;
  const USER = /^<@!?(\d{15,21})>/;
  const ROLE = /^<@&(\d{15,21})>/;
  const CHANNEL = /^<#(\d{15,21})>/;
  const EVERYONE = /^@(everyone|here)(?![A-Za-z0-9_])/;
  const EMOJI = /^<(a?):(\w{2,32}):(\d{15,21})>/;
  const TIMESTAMP = /^<t:(-?\d{1,17})(?::([tTdDfFR]))?>/;
  const AUTOLINK = /^<(https?:\/\/[^\s>]+)>/;
  const MASKED = /^\[((?:\\[\s\S]|[^\\\]\n])+)\]\(\s*<?(https?:\/\/[^\s>)]+)>?\s*\)/;
  const URL_RULE = /^https?:\/\/[^\s<]+[^<.,:;"')\]\s]/;
  const STRONG = /^\*\*([\s\S]+?)\*\*(?!\*)/;
  const UNDERLINE = /^__([\s\S]+?)__(?!_)/;
  const EM_STAR = /^\*(?=\S)((?:\*\*|\\[\s\S]|\s+(?:\\[\s\S]|[^\s*\\]|\*\*)|[^\s*\\])+?)\*(?!\*)/;
  const EM_UNDER = /^_((?:__|\\[\s\S]|[^\\_])+?)_(?![A-Za-z0-9_])/;
  const STRIKE = /^~~([\s\S]+?)~~/;
  const TEXT = /^[\s\S]+?(?=[^0-9A-Za-z\s\u00c0-\uffff]|\n|\w+:\S|$)/;

  function link(href, children, title) {
    const a = el("a", "md-link", children);
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    if (title) a.title = title;
    return a;
  }

  // Discord shows no language label: the language only picks the highlighting (kept as the
  // code's class and the block's data-lang for tests and tools).
  function codeBlock(lang, body) {
    const code = el("code", lang ? "language-" + lang : null, [text(body)]);
    const block = el("div", "md-codeblock", [el("pre", null, [code])]);
    block.dataset.lang = lang || "";
    return block;
  }

  function mention(kind, id, ctx) {
    const info = (ctx.mention && ctx.mention(kind, id)) || { label: kind === "channel" ? "#" + id : "@" + id, pinged: false };
    const pill = el("span", "md-mention md-mention-" + kind + (info.pinged ? " pinged" : " not-pinged"), [text(info.label)]);
    pill.dataset.id = id;
    pill.dataset.pinged = String(Boolean(info.pinged));
    if (kind !== "channel") {
      pill.title = info.pinged ? "pings " + info.label + " (allowed_mentions)" : "does not ping: not allowed by allowed_mentions";
    }
    return pill;
  }

  const TIME_FORMATS = {
    t: { timeStyle: "short" },
    T: { timeStyle: "medium" },
    d: { dateStyle: "short" },
    D: { dateStyle: "long" },
    f: { dateStyle: "long", timeStyle: "short" },
    F: { dateStyle: "full", timeStyle: "short" },
  };

  function timestamp(seconds, style) {
    const date = new Date(Number(seconds) * 1000);
    let label;
    if (style === "R") {
      const delta = Math.round((date.getTime() - Date.now()) / 1000);
      const units = [["year", 31536000], ["month", 2592000], ["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
      const [unit, size] = units.find(([, s]) => Math.abs(delta) >= s) || ["second", 1];
      label = new Intl.RelativeTimeFormat("en", { numeric: "auto" }).format(Math.round(delta / size), unit);
    } else {
      label = new Intl.DateTimeFormat("en", TIME_FORMATS[style || "f"]).format(date);
    }
    const node = el("time", "md-timestamp", [text(label)]);
    node.dateTime = date.toISOString();
    node.title = date.toString();
    return node;
  }

  const INLINE = [
    [CODE_BLOCK, (m) => codeBlock(m[1] || "", m[2])],
    [INLINE_CODE, (m) => el("code", "md-inline-code", [text(m[2].replace(/^ (?= *`)|(` *) $/g, "$1"))])],
    [ESCAPE, (m) => text(m[1])],
    [SPOILER, (m, ctx) => {
      const node = el("span", "md-spoiler", parse(m[1], { ...ctx, blocks: false }));
      node.title = "spoiler: click to reveal";
      node.addEventListener("click", () => node.classList.add("revealed"));
      return node;
    }],
    [USER, (m, ctx) => mention("user", m[1], ctx)],
    [ROLE, (m, ctx) => mention("role", m[1], ctx)],
    [CHANNEL, (m, ctx) => mention("channel", m[1], ctx)],
    [EVERYONE, (m, ctx) => mention("everyone", m[1], ctx)],
    [EMOJI, (m) => {
      const node = el("span", "md-emoji", [text(":" + m[2] + ":")]);
      node.title = ":" + m[2] + ":";
      return node;
    }],
    [TIMESTAMP, (m) => timestamp(m[1], m[2])],
    [AUTOLINK, (m) => link(m[1], [text(m[1])])],
    [MASKED, (m, ctx) => link(m[2], parse(m[1], { ...ctx, blocks: false }), m[2])],
    [URL_RULE, (m) => link(m[0], [text(m[0])])],
    [STRONG, (m, ctx) => el("strong", null, parse(m[1], { ...ctx, blocks: false }))],
    [UNDERLINE, (m, ctx) => el("u", null, parse(m[1], { ...ctx, blocks: false }))],
    [EM_STAR, (m, ctx) => el("em", null, parse(m[1], { ...ctx, blocks: false }))],
    [EM_UNDER, (m, ctx, prev) => (/[A-Za-z0-9]/.test(prev) ? null : el("em", null, parse(m[1], { ...ctx, blocks: false })))],
    [STRIKE, (m, ctx) => el("s", null, parse(m[1], { ...ctx, blocks: false }))],
  ];

  // Parse *src* into an array of DOM nodes. ctx.blocks === false turns the line-start rules
  // off (inside headings, list items and inline formatting); ctx.quote === false forbids
  // nested block quotes (Discord has none).
  function parse(src, ctx) {
    ctx = ctx || {};
    const out = [];
    let pending = "";
    let pos = 0;
    const flush = () => {
      if (pending) out.push(text(pending));
      pending = "";
    };
    while (pos < src.length) {
      const rest = src.slice(pos);
      const prev = pos > 0 ? src[pos - 1] : "";
      if (ctx.blocks !== false && (pos === 0 || prev === "\n")) {
        const block = parseLineStart(rest, ctx);
        if (block) {
          flush();
          out.push(block[0]);
          pos += block[1];
          continue;
        }
      }
      if (rest[0] === "\n") {
        flush();
        out.push(el("br"));
        pos += 1;
        continue;
      }
      let done = false;
      for (const [rule, build] of INLINE) {
        const match = rule.exec(rest);
        if (!match) continue;
        const node = build(match, ctx, prev);
        if (node === null) continue;
        flush();
        out.push(node);
        pos += match[0].length;
        done = true;
        break;
      }
      if (done) continue;
      const plain = TEXT.exec(rest);
      const size = plain ? plain[0].length : 1;
      pending += rest.slice(0, size);
      pos += size;
    }
    flush();
    return out;
  }

  // Render *src* into a new element (a div.md). *ctx.mention(kind, id)* resolves a mention
  // to {label, pinged}.
  function render(src, ctx) {
    return el("div", "md", parse(src || "", ctx || {}));
  }

  // The one-line text of *src* as a reply preview shows it: markdown rendered, then its text
  // with every line break and block boundary as one space (mentions keep their labels).
  const BLOCKS = new Set(["DIV", "PRE", "H1", "H2", "H3", "LI", "UL", "OL", "BLOCKQUOTE", "SMALL"]);

  function plainText(src, ctx) {
    const parts = [];
    const walk = (node) => {
      if (node.nodeType === 3) {
        parts.push(node.nodeValue);
        return;
      }
      if (node.nodeName === "BR") {
        parts.push(" ");
        return;
      }
      const block = BLOCKS.has(node.nodeName);
      if (block) parts.push(" ");
      for (const child of node.childNodes) walk(child);
      if (block) parts.push(" ");
    };
    for (const node of parse(src || "", ctx || {})) walk(node);
    return parts.join("").replace(/\s+/g, " ").trim();
  }

  global.rxcordMarkdown = { parse, render, plainText };
})(window);
