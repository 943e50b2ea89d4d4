// The rxcord emulator page: channels on the left, the selected channel's messages on the right,
// live through the emulator's server-sent events, a composer posting as a user.
// Only the emulator's own routes are used (see rxcord.testing.page).
(function () {
  "use strict";

  const API = document.querySelector('meta[name="rxcord-api-base"]').content;
  const EMU = API + "/_emulator";
  const TYPING_SECONDS = 10;
  const GROUP_MS = 7 * 60 * 1000;
  const AVATAR_COLOURS = ["#5865f2", "#757e8a", "#3ba55c", "#faa61a", "#ed4245", "#eb459f"];
  const RATELOG_MAX = 200;

  const $ = (id) => document.getElementById(id);
  const page = (window.rxcordPage = {
    ready: false,
    connected: false,
    events: 0,
    rateEvents: [],
    errors: [],
  });

  const state = {
    channels: new Map(), // id -> channel object
    order: [], // channel ids as listed
    messages: new Map(), // channel id -> Map(message id -> message)
    users: new Map(), // user id -> display name
    selected: null,
    typing: new Map(), // channel id -> Map(user id -> {name, until})
    me: loadMe(),
    nodes: new Map(), // message id -> {message, previous, names, node} of the channel shown
    names: 0, // bumped whenever a user's name is learned or changes
    unread: new Map(), // channel id -> Set(message ids that arrived while it was not shown)
    roles: new Map(), // role id -> name (the guild's roles, POST /_emulator/roles)
    dismissed: new Set(), // ephemeral message ids hidden with "Dismiss message"
  };

  function setName(id, name) {
    if (state.users.get(id) !== name) {
      state.users.set(id, name);
      state.names += 1;
    }
  }

  // -- helpers ------------------------------------------------------------------------

  function el(tag, className, children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children || []) node.append(typeof child === "string" ? document.createTextNode(child) : child);
    return node;
  }

  function loadMe() {
    let me = null;
    try {
      me = JSON.parse(localStorage.getItem("rxcord-emulator-me") || "null");
    } catch (err) {
      me = null;
    }
    if (!me || !/^\d{15,21}$/.test(me.id || "")) {
      // A random snowflake-shaped id (two browsers opened at once still differ), stored at
      // start, so a reload is the same user: the bot sees one asker, replies stay "yours".
      const digits = new Uint32Array(2);
      crypto.getRandomValues(digits);
      me = { id: "2" + String(digits[0]).padStart(9, "0").slice(-9) + String(digits[1]).padStart(9, "0").slice(-8), username: "you" };
    }
    if (typeof me.username !== "string" || !me.username.trim()) me.username = "you";
    return me;
  }

  function saveMe() {
    try {
      localStorage.setItem("rxcord-emulator-me", JSON.stringify(state.me));
    } catch (err) {
      /* private mode: keep it in memory */
    }
  }

  function snowflakeTime(id) {
    try {
      return Number((BigInt(id) >> 22n) + 1420070400000n);
    } catch (err) {
      return 0;
    }
  }

  function compareIds(a, b) {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }

  function displayName(user) {
    if (!user) return "unknown";
    return user.global_name || user.username || "user-" + String(user.id || "").slice(-4);
  }

  function avatarFor(name, id, url) {
    const box = el("div", "avatar");
    // Discord's default avatars: (id >> 22) % 6 picks one of six colours.
    const seed = id && /^\d+$/.test(String(id)) ? Number((BigInt(id) >> 22n) % 6n) : 0;
    box.style.background = AVATAR_COLOURS[seed];
    if (url && /^(data:image\/|\/)/.test(url)) {
      const img = el("img");
      img.src = url;
      img.alt = "";
      box.append(img);
    } else {
      box.textContent = (name || "?").trim().slice(0, 1).toUpperCase() || "?";
    }
    if (url) box.dataset.avatarUrl = url;
    return box;
  }

  function timeLabel(iso) {
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return "";
    const now = new Date();
    const clock = date.toLocaleTimeString("en", { hour: "2-digit", minute: "2-digit" });
    if (date.toDateString() === now.toDateString()) return "Today at " + clock;
    return date.toLocaleDateString("en") + " " + clock;
  }

  async function api(method, path, body) {
    const init = { method, headers: {} };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const textBody = await response.text();
    let data = null;
    try {
      data = textBody ? JSON.parse(textBody) : null;
    } catch (err) {
      data = textBody;
    }
    if (!response.ok) {
      const message = data && data.message ? data.message : response.status + " " + response.statusText;
      throw new Error(message);
    }
    return data;
  }

  // -- channels -----------------------------------------------------------------------

  function addChannel(channel) {
    const id = String(channel.id);
    const known = state.channels.get(id);
    state.channels.set(id, { ...(known || {}), ...channel, id });
    if (!state.order.includes(id)) state.order.push(id);
  }

  function ensureChannel(id) {
    if (!state.channels.has(id)) {
      addChannel({ id, name: id, type: 0, discovered: true });
      renderChannels();
    }
  }

  function channelName(id) {
    const channel = state.channels.get(id);
    return channel ? channel.name || id : id;
  }

  function renderChannels() {
    const list = $("channels");
    list.replaceChildren();
    const children = new Map();
    for (const id of state.order) {
      const parent = state.channels.get(id).parent_id;
      if (parent && state.channels.has(String(parent))) {
        if (!children.has(String(parent))) children.set(String(parent), []);
        children.get(String(parent)).push(id);
      }
    }
    const item = (id, thread) => {
      const channel = state.channels.get(id);
      const unread = id === state.selected ? 0 : (state.unread.get(id) || new Set()).size;
      const li = el("li", "channel" + (thread ? " thread" : "") + (id === state.selected ? " selected" : ""), [
        el("span", "hash", [thread ? "↳" : "#"]),
        el("span", "channel-label", [channel.name || id]),
      ]);
      if (unread) {
        const count = el("span", "channel-count", [String(unread)]);
        count.title = unread === 1 ? "1 unread message" : unread + " unread messages";
        li.append(count);
      }
      li.dataset.id = id;
      li.title = id;
      li.addEventListener("click", () => select(id));
      return li;
    };
    for (const id of state.order) {
      const channel = state.channels.get(id);
      if (channel.parent_id && state.channels.has(String(channel.parent_id))) continue;
      list.append(item(id, false));
      for (const child of children.get(id) || []) list.append(item(child, true));
    }
  }

  async function loadChannels() {
    const channels = await api("GET", EMU + "/channels");
    for (const channel of channels || []) addChannel(channel);
    renderChannels();
  }

  // -- messages -----------------------------------------------------------------------

  function channelMessages(id) {
    if (!state.messages.has(id)) state.messages.set(id, new Map());
    return state.messages.get(id);
  }

  function remember(message) {
    const author = message.author;
    if (author && author.id && !message.webhook_id) setName(String(author.id), displayName(author));
    for (const user of message.mentions || []) {
      if (!state.users.has(String(user.id))) setName(String(user.id), displayName(user));
    }
  }

  function upsert(message) {
    const channel = String(message.channel_id);
    ensureChannel(channel);
    remember(message);
    const messages = channelMessages(channel);
    const known = messages.get(String(message.id));
    messages.set(String(message.id), known ? { ...known, ...message } : message);
    if (message.thread && message.thread.id) {
      addChannel({ ...message.thread, parent_id: message.thread.parent_id || channel });
      renderChannels();
    }
    return channel;
  }

  async function loadMessages(id) {
    const messages = await api("GET", EMU + "/channels/" + encodeURIComponent(id) + "/messages");
    const map = channelMessages(id);
    map.clear();
    for (const message of messages || []) upsert(message);
  }

  function mentionResolver(message) {
    const pingedUsers = new Set((message.mentions || []).map((user) => String(user.id)));
    const pingedRoles = new Set((message.mention_roles || []).map(String));
    return (kind, id) => {
      if (kind === "user") {
        const user = (message.mentions || []).find((u) => String(u.id) === id);
        // A name seen on the user's own messages beats the mention's (the emulator's placeholder).
        const name = state.users.get(id) || (user ? displayName(user) : "user-" + id.slice(-4));
        return { label: "@" + name, pinged: pingedUsers.has(id) };
      }
      if (kind === "role") return { label: "@" + (state.roles.get(id) || "role-" + id.slice(-4)), pinged: pingedRoles.has(id) };
      if (kind === "channel") return { label: "#" + channelName(id), pinged: false };
      return { label: "@" + id, pinged: Boolean(message.mention_everyone) };
    };
  }

  function pingsMe(message) {
    return (
      Boolean(message.mention_everyone) ||
      (message.mentions || []).some((user) => String(user.id) === state.me.id)
    );
  }

  function renderEmbed(embed, message) {
    const colour = typeof embed.color === "number" ? "#" + embed.color.toString(16).padStart(6, "0") : "#1e1f22";
    const box = el("div", "embed");
    box.style.borderLeftColor = colour;
    const ctx = { mention: mentionResolver(message) };
    if (embed.author && embed.author.name) box.append(el("div", "embed-author", [embed.author.name]));
    if (embed.title) {
      const title = el("div", "embed-title", window.rxcordMarkdown.parse(embed.title, { ...ctx, blocks: false }));
      box.append(title);
    }
    if (embed.description) {
      const description = window.rxcordMarkdown.render(embed.description, ctx);
      description.classList.add("embed-description");
      box.append(description);
    }
    if (Array.isArray(embed.fields) && embed.fields.length) {
      const fields = el("div", "embed-fields");
      for (const field of embed.fields) {
        const node = el("div", "embed-field" + (field.inline ? " inline" : ""), [
          el("div", "embed-field-name", window.rxcordMarkdown.parse(String(field.name || ""), { ...ctx, blocks: false })),
        ]);
        const value = window.rxcordMarkdown.render(String(field.value || ""), ctx);
        value.classList.add("embed-field-value");
        node.append(value);
        fields.append(node);
      }
      box.append(fields);
    }
    const footer = [];
    if (embed.footer && embed.footer.text) footer.push(embed.footer.text);
    if (embed.timestamp) footer.push(timeLabel(embed.timestamp));
    if (footer.length) box.append(el("div", "embed-footer", [footer.join(" • ")]));
    return box;
  }

  function renderAttachment(attachment) {
    const url = String(attachment.url || "");
    const name = String(attachment.filename || url.split("/").pop() || "file");
    const isImage = /^image\//.test(attachment.content_type || "") || /\.(png|jpe?g|gif|webp)$/i.test(name);
    // Only same-origin or inline images load: the page never reaches out (see the CSP).
    if (isImage && /^(data:image\/|\/)/.test(url)) {
      const img = el("img", "attachment-image");
      img.src = url;
      img.alt = name;
      return img;
    }
    const box = el("div", "attachment", [el("span", "attachment-icon", [isImage ? "🖼" : "📄"]), el("span", "attachment-name", [name])]);
    if (attachment.size) box.append(el("span", "attachment-size", [Math.max(1, Math.round(attachment.size / 1024)) + " KB"]));
    box.title = url;
    return box;
  }

  // Who an ephemeral message is for (its interaction's user), or null for everyone's messages.
  function ephemeralFor(message) {
    if (!(message.flags & 64)) return null;
    const meta = message.interaction_metadata || message.interaction || {};
    return String((meta.user && meta.user.id) || state.me.id);
  }

  // Discord's header above an interaction response: "<avatar> alice used /stop".
  function renderInteraction(message) {
    const meta = message.interaction_metadata || message.interaction;
    if (!meta || !meta.name || message.message_reference) return null;
    const user = meta.user || {};
    const name = state.users.get(String(user.id)) || displayName(user);
    const bar = el("div", "reply interaction-header", [
      avatarFor(name, user.id),
      el("span", "reply-author", [name]),
      el("span", "interaction-used", [" used "]),
      el("span", "interaction-command", ["/" + meta.name]),
    ]);
    bar.dataset.user = String(user.id || "");
    return bar;
  }

  function renderReply(message) {
    const reference = message.message_reference;
    if (!reference) return renderInteraction(message);
    if (message.type === 21) return null;
    const target = message.referenced_message;
    const bar = el("div", "reply");
    if (!target) {
      bar.append(el("span", "reply-missing", ["Original message was deleted"]));
      return bar;
    }
    const name = displayName(target.author);
    const resolve = mentionResolver(target);
    // One line, markdown stripped (as Discord's preview): formatting, fences, headings and line
    // breaks go, mentions keep their names.
    const attached = (target.embeds && target.embeds.length) || (target.attachments && target.attachments.length);
    const snippet = window.rxcordMarkdown.plainText(target.content || "", { mention: resolve }) || (attached ? "Click to see attachment" : "");
    bar.append(
      avatarFor(name, target.author && target.author.id),
      el("span", "reply-author", ["@" + name]),
      el("span", "reply-content", [snippet.slice(0, 120)]),
    );
    bar.dataset.target = String(target.id);
    bar.addEventListener("click", () => {
      const node = document.querySelector('.msg[data-id="' + String(target.id) + '"]');
      if (node) {
        node.scrollIntoView({ block: "center" });
        node.classList.add("flash");
        setTimeout(() => node.classList.remove("flash"), 1200);
      }
    });
    return bar;
  }

  function renderMessage(message, previous) {
    const author = message.author || {};
    const name = displayName(author);
    const webhook = Boolean(message.webhook_id);
    const node = el("div", "msg");
    node.dataset.id = String(message.id);
    node.dataset.author = String(author.id || "");
    if (pingsMe(message)) node.classList.add("mentioned");
    const reply = renderReply(message);
    const grouped =
      !reply &&
      previous &&
      previous.author &&
      String(previous.author.id) === String(author.id) &&
      (previous.author.username || "") === (author.username || "") &&
      Math.abs(snowflakeTime(message.id) - snowflakeTime(previous.id)) < GROUP_MS;
    if (reply) node.append(reply);
    if (grouped) {
      node.classList.add("grouped");
      node.append(el("div", "gutter", [el("span", "gutter-time", [timeLabel(message.timestamp).replace("Today at ", "")])]));
    } else {
      node.append(avatarFor(name, author.id, author.avatar_url || message.avatar_url));
    }
    const body = el("div", "msg-body");
    if (!grouped) {
      const header = el("div", "msg-header", [el("span", "msg-author", [name])]);
      if (webhook || author.bot) {
        const tag = el("span", "tag", [webhook ? "BOT" : "APP"]);
        tag.title = webhook ? "webhook message" : "application (bot user)";
        header.append(tag);
      }
      header.append(el("time", "msg-time", [timeLabel(message.timestamp)]));
      body.append(header);
    }
    const content = window.rxcordMarkdown.render(message.content || "", { mention: mentionResolver(message) });
    content.classList.add("msg-content");
    if (message.edited_timestamp) {
      const edited = el("span", "edited", ["(edited)"]);
      edited.title = timeLabel(message.edited_timestamp);
      content.append(edited);
    }
    if (message.content || message.edited_timestamp) body.append(content);
    const embeds = message.embeds || [];
    if (embeds.length) body.append(el("div", "embeds", embeds.map((embed) => renderEmbed(embed, message))));
    const attachments = message.attachments || [];
    if (attachments.length) body.append(el("div", "attachments", attachments.map(renderAttachment)));
    if (message.thread && message.thread.id) {
      const thread = el("div", "thread-box", [
        el("span", "thread-name", [message.thread.name || "thread"]),
        el("span", "thread-count", [threadCount(message.thread) + " ›"]),
      ]);
      thread.addEventListener("click", () => select(String(message.thread.id)));
      body.append(thread);
    }
    const only = ephemeralFor(message);
    if (only !== null) {
      const meta = message.interaction_metadata || message.interaction || {};
      const who = only === state.me.id ? "you" : state.users.get(only) || displayName(meta.user || { id: only });
      const dismiss = el("a", "ephemeral-dismiss", ["Dismiss message"]);
      dismiss.href = "#";
      dismiss.addEventListener("click", (event) => {
        event.preventDefault();
        state.dismissed.add(String(message.id));
        renderMessages();
      });
      body.append(el("div", "ephemeral", ["Only " + who + " can see this · ", dismiss]));
    }
    node.append(body);
    return node;
  }

  function threadCount(thread) {
    const loaded = state.messages.get(String(thread.id));
    const count = Math.max(loaded ? loaded.size : 0, Number(thread.message_count || 0));
    return count === 1 ? "1 message" : count + " messages";
  }

  function renderMessages() {
    const box = $("messages");
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    box.replaceChildren();
    const id = state.selected;
    if (!id) return;
    const messages = [...channelMessages(id).values()]
      .filter((message) => !state.dismissed.has(String(message.id)))
      .sort((a, b) => compareIds(a.id, b.id));
    if (!messages.length) {
      box.append(el("div", "empty", ["No messages in #" + channelName(id) + " yet."]));
    }
    // A message's node is reused while the message, its predecessor and the known names are
    // unchanged (so a revealed spoiler stays revealed and a long channel re-renders cheaply).
    const cache = new Map();
    let previous = null;
    for (const message of messages) {
      const key = String(message.id);
      const known = state.nodes.get(key);
      let node;
      if (known && known.message === message && known.previous === previous && known.names === state.names) {
        node = known.node;
      } else {
        node = renderMessage(message, previous);
      }
      cache.set(key, { message, previous, names: state.names, node });
      box.append(node);
      previous = message;
    }
    state.nodes = cache;
    box.dataset.count = String(messages.length);
    if (atBottom || !box.dataset.scrolled) box.scrollTop = box.scrollHeight;
    box.dataset.scrolled = "1";
  }

  async function select(id) {
    if (state.selected !== id) delete $("messages").dataset.scrolled;
    state.selected = id;
    state.unread.delete(id); // viewed: read
    if (location.hash !== "#" + id) history.replaceState(null, "", "#" + id);
    $("channel-name").textContent = channelName(id);
    const channel = state.channels.get(id) || {};
    $("channel-topic").textContent = channel.topic || "";
    $("composer-input").placeholder = "Message #" + channelName(id) + "  (/stop, /kill: slash commands)";
    renderChannels();
    try {
      await loadMessages(id);
    } catch (err) {
      showError("cannot load messages: " + err.message);
    }
    if (state.selected === id) {
      renderMessages();
      renderTyping();
    }
  }

  // -- typing -------------------------------------------------------------------------

  function renderTyping() {
    const box = $("typing");
    const now = Date.now();
    const typing = state.typing.get(state.selected) || new Map();
    for (const [user, entry] of typing) if (entry.until <= now) typing.delete(user);
    const names = [...typing.values()].map((entry) => entry.name);
    box.replaceChildren();
    box.classList.toggle("active", names.length > 0);
    if (names.length) {
      box.append(el("span", "typing-dots", [el("i"), el("i"), el("i")]), el("strong", null, [names.join(", ")]), names.length > 1 ? " are typing…" : " is typing…");
    }
  }

  async function loadMembers() {
    // The guild's members: the bot and every user who acted, for names the events leave out.
    try {
      const guild = await api("GET", EMU + "/guild");
      for (const member of (guild && guild.members) || []) {
        if (member.user && member.user.id) setName(String(member.user.id), member.nick || displayName(member.user));
      }
      for (const role of (guild && guild.roles) || []) learnRole(role);
    } catch (err) {
      /* names stay user-NNNN */
    }
  }

  function learnRole(role) {
    if (!role || !role.id) return;
    if (state.roles.get(String(role.id)) !== role.name) {
      state.roles.set(String(role.id), String(role.name));
      state.names += 1; // mention pills re-render with the name
    }
  }

  async function onTyping(data) {
    const channel = String(data.channel_id);
    const user = String(data.user_id || (data.member && data.member.user && data.member.user.id) || "");
    const seconds = typeof data.duration === "number" ? data.duration : TYPING_SECONDS;
    const until = Date.now() + seconds * 1000;
    const named =
      (data.member && data.member.user && displayName(data.member.user)) || (data.user && displayName(data.user));
    if (!named && !state.users.has(user)) await loadMembers();
    const name = named || state.users.get(user) || "user-" + user.slice(-4);
    if (!state.typing.has(channel)) state.typing.set(channel, new Map());
    state.typing.get(channel).set(user, { name, until });
    if (channel === state.selected) renderTyping();
  }

  function stopTyping(message) {
    const typing = state.typing.get(String(message.channel_id));
    if (typing && message.author) typing.delete(String(message.author.id));
  }

  // -- rate-limit log -----------------------------------------------------------------

  function logRate(kind, data) {
    page.rateEvents.push({ kind, data });
    const list = $("ratelog-entries");
    const wait = data.retry_after ?? data.wait ?? data.reset_after;
    const seconds = typeof wait === "number" ? wait.toFixed(3) + " s" : "";
    const what = kind === "rate_limit" || data.status === 429 ? "429" : kind === "bucket_exhausted" ? "bucket empty" : kind.replace(/_/g, " ");
    const entry = el("li", "rate " + (what === "429" ? "rate-429" : "rate-wait"), [
      el("time", null, [new Date().toLocaleTimeString("en", { hour12: false })]),
      el("strong", null, [what]),
      " ",
      // Line breaks are allowed after each "/" only, so a route never breaks inside a word.
      el("span", "rate-route", String(data.route || data.bucket || "").split(/(?<=\/)/).flatMap((part) => [part, el("wbr")])),
    ]);
    if (seconds) entry.append(el("span", "rate-wait-time", [(what === "429" ? "retry after " : "resets in ") + seconds]));
    if (data.scope) entry.append(el("span", "rate-scope", [String(data.scope)]));
    if (data.channel_id || data.major) entry.append(el("span", "rate-major", ["#" + channelName(String(data.channel_id || data.major))]));
    entry.title = JSON.stringify(data);
    list.prepend(entry);
    while (list.children.length > RATELOG_MAX) list.lastElementChild.remove();
    $("ratelog-count").textContent = String(page.rateEvents.length);
  }

  // -- live events --------------------------------------------------------------------

  function onEvent(kind, data) {
    page.events += 1;
    kind = String(kind).toLowerCase();
    if (kind === "message_create" || kind === "message_update") {
      const message = data.message || data;
      const channel = upsert(message);
      if (kind === "message_create") {
        stopTyping(message);
        countUnread(channel, message);
      }
      const parent = (state.channels.get(channel) || {}).parent_id;
      if (parent) {
        // The thread's starter message shows its message count: a new object re-renders it.
        const siblings = channelMessages(String(parent));
        const starter = siblings.get(channel);
        if (starter) siblings.set(channel, { ...starter });
      }
      if (channel === state.selected || (parent && String(parent) === state.selected)) {
        renderMessages();
        renderTyping();
      }
      renderChannels();
    } else if (kind === "message_delete") {
      const info = data.message || data;
      const channel = String(info.channel_id);
      channelMessages(channel).delete(String(info.id));
      if (state.unread.has(channel)) state.unread.get(channel).delete(String(info.id));
      if (channel === state.selected) renderMessages();
      renderChannels();
    } else if (kind === "typing_start") {
      onTyping(data);
    } else if (kind === "role_create" || kind === "role_update") {
      learnRole(data.role);
      if (state.selected) renderMessages();
    } else if (kind === "rate_limit" || kind === "bucket_exhausted" || kind === "rate_limit_wait") {
      logRate(kind, data);
    } else if (kind === "channel_create" || kind === "thread_create") {
      const channel = data.thread || data.channel || data;
      addChannel(channel);
      // A thread started from a message has that message's id: the message shows it.
      const parent = channel.parent_id ? channelMessages(String(channel.parent_id)) : null;
      const starter = parent && parent.get(String(channel.id));
      if (starter) starter.thread = channel;
      renderChannels();
      if (starter && String(channel.parent_id) === state.selected) renderMessages();
    }
  }

  // A message is unread when it arrives in a channel not shown, is not yours, and is for you
  // to see (an ephemeral answer to someone else is not).
  function countUnread(channel, message) {
    if (channel === state.selected) return;
    if (message.author && String(message.author.id) === state.me.id) return;
    const only = ephemeralFor(message);
    if (only !== null && only !== state.me.id) return;
    if (!state.unread.has(channel)) state.unread.set(channel, new Set());
    state.unread.get(channel).add(String(message.id));
  }

  const EVENT_KINDS = [
    "message_create",
    "message_update",
    "message_delete",
    "typing_start",
    "interaction_create",
    "interaction_response",
    "rate_limit",
    "bucket_exhausted",
    "rate_limit_wait",
    "channel_create",
    "thread_create",
    "role_create",
    "role_update",
  ];

  function connect() {
    const source = new EventSource(EMU + "/events");
    const status = $("connection");
    source.addEventListener("open", () => {
      page.connected = true;
      status.textContent = "live";
      status.className = "online";
      // Catch up on whatever happened while we were not connected.
      if (state.selected) select(state.selected);
    });
    source.addEventListener("error", () => {
      page.connected = false;
      status.textContent = "reconnecting…";
      status.className = "offline";
    });
    const handle = (kind) => (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch (err) {
        return;
      }
      if (kind === null) {
        const name = data.kind || data.type || data.t;
        if (!name) return;
        onEvent(name, data.data || data.d || {});
      } else {
        onEvent(kind, data);
      }
    };
    for (const kind of EVENT_KINDS) source.addEventListener(kind, handle(kind));
    source.onmessage = handle(null);
  }

  // -- composer -----------------------------------------------------------------------

  function showError(message) {
    page.errors.push(message);
    const box = $("composer-error");
    box.textContent = message;
    clearTimeout(showError.timer);
    showError.timer = setTimeout(() => (box.textContent = ""), 6000);
  }

  function parseCommand(textValue) {
    const match = /^\/([\w-]{1,32})(?:\s+([\s\S]*))?$/.exec(textValue.trim());
    if (!match) return null;
    const options = {};
    const rest = (match[2] || "").trim();
    const pairs = [...rest.matchAll(/(\w[\w-]*):("[^"]*"|\S+)/g)];
    if (pairs.length) {
      for (const pair of pairs) options[pair[1]] = pair[2].replace(/^"|"$/g, "");
    } else if (rest) {
      // Free text goes to the command's first option (or "text" when the command is unknown).
      const known = (state.commands || []).find((c) => c.name === match[1]);
      const first = known && (known.options || [])[0];
      options[first ? first.name : "text"] = rest;
    }
    return { command: match[1], options };
  }

  // "@name" of a known user becomes a mention, as Discord's client does when you pick a name.
  function withMentions(textValue) {
    const names = [...state.users.entries()].sort((a, b) => b[1].length - a[1].length);
    let out = textValue;
    for (const [id, name] of names) {
      if (!name || name === "everyone" || name === "here") continue;
      const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      out = out.replace(new RegExp("(^|[\\s(])@" + escaped + "(?![\\w-])", "g"), (_, lead) => lead + "<@" + id + ">");
    }
    return out;
  }

  async function send(textValue) {
    const channel = state.selected;
    if (!channel || !textValue.trim()) return;
    const who = { channel_id: channel, author_id: state.me.id, username: state.me.username };
    const command = parseCommand(textValue);
    if (command) {
      await api("POST", EMU + "/interactions", { ...who, command: command.command, options: command.options });
    } else {
      const message = await api("POST", EMU + "/messages", { ...who, content: withMentions(textValue) });
      if (message && message.id) {
        upsert(message);
        if (state.selected === channel) renderMessages();
      }
    }
  }

  async function loadCommands() {
    try {
      const commands = await api("GET", EMU + "/commands");
      state.commands = Array.isArray(commands) ? commands : [];
    } catch (err) {
      state.commands = [];
    }
  }

  function commandHints(value) {
    const typed = value.slice(1).split(/\s/)[0].toLowerCase();
    const known = (state.commands || []).filter((c) => String(c.name || "").startsWith(typed));
    const rows = known.map((c) => {
      const options = (c.options || []).map((o) => " " + o.name + ":…").join("");
      return el("div", "command", [el("strong", null, ["/" + c.name]), options, el("span", "command-description", [c.description ? "  " + c.description : ""])]);
    });
    if (!rows.length) rows.push(el("div", "command", [(state.commands || []).length ? "no such command registered" : "no slash commands registered yet (a bot registers them at start-up)"]));
    rows.unshift(el("div", "command-as", ["slash command as " + state.me.username + " (options as name:value)"]));
    return rows;
  }

  function setupComposer() {
    const input = $("composer-input");
    const hint = $("command-hint");
    const grow = () => {
      input.style.height = "auto";
      input.style.height = Math.min(input.scrollHeight, 240) + "px";
    };
    input.addEventListener("input", () => {
      grow();
      const value = input.value;
      const wasHidden = hint.hidden;
      hint.hidden = !value.startsWith("/");
      if (wasHidden && !hint.hidden) loadCommands().then(() => {
        if (!hint.hidden) hint.replaceChildren(...commandHints(input.value));
      });
      if (!hint.hidden) hint.replaceChildren(...commandHints(value));
    });
    input.addEventListener("keydown", async (event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      const value = input.value;
      if (!value.trim()) return;
      input.value = "";
      hint.hidden = true;
      grow();
      try {
        await send(value);
      } catch (err) {
        input.value = value;
        showError(err.message);
      }
    });
    $("composer").addEventListener("submit", (event) => event.preventDefault());
    const username = $("me-username");
    username.value = state.me.username;
    $("me-id").textContent = state.me.id;
    const avatar = $("me-avatar");
    const refresh = () => avatar.replaceChildren(avatarFor(state.me.username, state.me.id));
    refresh();
    username.addEventListener("change", () => {
      const value = username.value.trim();
      if (value) {
        state.me.username = value.slice(0, 32);
        saveMe();
        refresh();
      }
    });
  }

  // -- start --------------------------------------------------------------------------

  async function start() {
    saveMe();
    setupComposer();
    setInterval(renderTyping, 1000);
    connect();
    loadCommands();
    await loadMembers();
    try {
      await loadChannels();
    } catch (err) {
      showError("cannot list channels: " + err.message);
    }
    const wanted = decodeURIComponent(location.hash.replace(/^#/, ""));
    if (/^\d+$/.test(wanted)) ensureChannel(wanted);
    const first = /^\d+$/.test(wanted) ? wanted : state.order[0];
    if (first) await select(first);
    window.addEventListener("hashchange", () => {
      const id = location.hash.replace(/^#/, "");
      if (/^\d+$/.test(id) && id !== state.selected) {
        ensureChannel(id);
        select(id);
      }
    });
    page.ready = true;
    // What a screenshot waits for (README, scripts/screenshot_page.py): channels listed and the
    // selected channel's messages rendered.
    document.body.dataset.ready = "true";
  }

  start();
})();
