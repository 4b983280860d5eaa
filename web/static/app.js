// aipm web: renders the State sent on /api/events and posts the actions.
// Every value from the State goes through textContent (never innerHTML).
'use strict';
(() => {
  const $ = (sel, root = document) => root.querySelector(sel);

  // el('div.card.x', {dataset: {...}, text: '...', ...props}, ...children)
  function el(spec, props, ...kids) {
    const parts = spec.split('.');
    const n = document.createElement(parts[0] || 'div');
    if (parts.length > 1) n.className = parts.slice(1).join(' ');
    if (props) {
      for (const k in props) {
        const v = props[k];
        if (v === undefined || v === null) continue;
        if (k === 'text') n.textContent = String(v);
        else if (k === 'dataset') Object.assign(n.dataset, v);
        else if (k === 'title') n.title = String(v);
        else if (k === 'ariaLabel') n.setAttribute('aria-label', String(v));
        else n[k] = v;
      }
    }
    for (const c of kids) if (c !== null && c !== undefined && c !== false) n.append(c);
    return n;
  }
  const str = (v) => (v === undefined || v === null ? '' : String(v));
  const arr = (v) => (Array.isArray(v) ? v : []);

  // ---- time ----
  let nowMs = Date.now();
  const parseT = (s) => { const t = Date.parse(s); return Number.isNaN(t) ? 0 : t; };
  function age(s) {
    const t = parseT(s);
    if (!t) return '';
    return span(Math.max(0, Math.round((nowMs - t) / 1000)));
  }
  // left is how long until s, as age says how long since: '' once past.
  function left(s) {
    const t = parseT(s);
    if (!t || t <= nowMs) return '';
    return span(Math.round((t - nowMs) / 1000));
  }
  // span is d seconds in the largest unit that fits.
  function span(d) {
    if (d < 60) return d + 's';
    d = Math.floor(d / 60);
    if (d < 60) return d + 'm';
    d = Math.floor(d / 60);
    if (d < 48) return d + 'h';
    return Math.floor(d / 24) + 'd';
  }
  const pad = (n) => (n < 10 ? '0' : '') + n;
  const MONTHS = 'Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec'.split(' ');
  function clock(s) {
    const t = parseT(s);
    if (!t) return '';
    const d = new Date(t), n = new Date(nowMs);
    const hm = pad(d.getHours()) + ':' + pad(d.getMinutes());
    if (d.toDateString() === n.toDateString()) return hm;
    return MONTHS[d.getMonth()] + ' ' + d.getDate() + ' ' + hm;
  }
  const DTF = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  const fullTime = (s) => { const t = parseT(s); return t ? DTF.format(t) : ''; };

  // ---- the task statuses and priorities: every State carries aipm's own
  // (statuses in workflow order, each open or not; priorities lowest
  // first), and the page restates none ----
  let statuses = []; // status names, in order: the board's columns
  let closed = new Set(); // statuses of finished tasks
  let blocked = new Set(); // statuses whose cards say why (blockedReason)
  let prioRank = new Map(); // priority -> rank, 1 the lowest
  let labels = new Map(); // status -> its name in words
  let vocabulary = '';
  const statusLabel = (st) => labels.get(st) || str(st);

  function takeVocabulary(s) {
    const sts = arr(s.statuses).filter((x) => x && x.name);
    const prios = arr(s.priorities).map(str);
    const key = JSON.stringify([sts, prios]);
    if (key === vocabulary) return;
    vocabulary = key;
    statuses = sts.map((x) => str(x.name));
    closed = new Set(sts.filter((x) => !x.open).map((x) => str(x.name)));
    blocked = new Set(sts.filter((x) => x.blocked).map((x) => str(x.name)));
    labels = new Map(sts.map((x) => [str(x.name), str(x.label) || str(x.name)]));
    prioRank = new Map(prios.map((p, i) => [p, i + 1]));
    cardTemplate = makeCardTemplate();
  }

  // ---- state kept across renders ----
  let state = null;
  let humans = [];
  const drafts = new Map(); // taskId -> {status, reason} typed on a board card
  const approvalDrafts = new Map(); // taskId -> reason typed on an approval
  const leaseDrafts = new Map(); // leaseId -> reason typed to break it
  const agentType = new Map();
  const taskTitle = new Map();

  // ---- selects: refilled only when their options change, keeping the choice ----
  function fillSelect(sel, items, fallback) {
    const key = items.map((i) => i[0] + '\u0000' + i[1]).join('\u0001');
    if (sel.dataset.key === key) return;
    const prev = sel.value;
    const f = document.createDocumentFragment();
    for (const [v, label] of items) f.append(el('option', { value: v, text: label }));
    sel.replaceChildren(f);
    sel.dataset.key = key;
    const vals = items.map((i) => i[0]);
    if (prev && vals.includes(prev)) sel.value = prev;
    else if (fallback !== undefined && vals.includes(fallback)) sel.value = fallback;
  }

  function fillSelects(s) {
    const ids = [];
    for (const a of arr(s.agents)) if (a && a.id && !ids.includes(a.id)) ids.push(a.id);
    for (const h of humans) if (!ids.includes(h)) ids.push(h);
    const ais = ids.filter((id) => !humans.includes(id));
    fillSelect($('#act-as'), humans.map((h) => [h, h]), humans[0]);
    const withType = (id) => [id, humans.includes(id) ? id + ' (human)' : id];
    fillSelect($('#send-form select[name=to]'), ais.concat(ids.filter((i) => humans.includes(i))).map(withType), ais[0]);
    fillSelect($('#task-form select[name=assignee]'), ais.concat(ids.filter((i) => humans.includes(i))).map(withType), ais[0]);
    fillSelect($('#task-form select[name=priority]'), arr(s.priorities).map((p) => [str(p), str(p)]), str(s.defaultPriority));
    // What a task may wait for: the open tasks (newest first, as the State
    // lists them); the depend form's second choice may also name a
    // finished one, to stop waiting for it.
    const tasks = arr(s.tasks).filter((t) => t && t.id);
    const open = tasks.filter((t) => !closed.has(t.status));
    const choice = (t) => [str(t.id), str(t.title) + ' (' + statusLabel(t.status) + ')'];
    fillSelect($('#task-form select[name=after]'), [['', 'waits for nothing']].concat(open.map((t) => [str(t.id), 'after ' + str(t.title)])), '');
    fillSelect($('#depend-form select[name=task]'), open.map(choice));
    fillSelect($('#depend-form select[name=on]'), tasks.map(choice));
  }

  // ---- board ----
  // A finished column shows the newest first; the others, the highest
  // priority first, then the longest waiting.
  function sortTasks(list, status) {
    if (closed.has(status)) {
      return list.sort((a, b) => parseT(b.statusChangedAt) - parseT(a.statusChangedAt));
    }
    const rank = (t) => prioRank.get(t.priority) || 0;
    return list.sort((a, b) => rank(b) - rank(a) || parseT(a.statusChangedAt) - parseT(b.statusChangedAt));
  }

  // A card is a clone of this template with its text filled in (much
  // faster than building 500 cards element by element); it is made again
  // when the statuses change.
  function makeCardTemplate() {
    const statusSelect = el('select.set-status', { ariaLabel: 'New status' });
    for (const st of statuses) statusSelect.append(el('option', { value: st, text: statusLabel(st) }));
    return el('article.card', null,
      el('div.card-head', null, el('span.priority'), el('span.age')),
      el('div.title'),
      el('div.meta', null, el('span.assignee'), el('span.tid')),
      el('div.card-actions', null, statusSelect,
        el('input.reason', { type: 'text', placeholder: 'reason', ariaLabel: 'Reason' }),
        el('button.apply-status', { type: 'button', text: 'Set' })));
  }
  let cardTemplate = makeCardTemplate();

  function card(t) {
    const id = str(t.id);
    const c = cardTemplate.cloneNode(true);
    const [head, title, meta, actions] = c.children;
    c.dataset.taskId = id;
    c.classList.add('prio-' + (str(t.priority) || 'none'));
    head.firstChild.textContent = str(t.priority) || '—';
    head.lastChild.textContent = age(t.statusChangedAt);
    head.lastChild.title = 'in this status since ' + str(t.statusChangedAt);
    title.textContent = str(t.title);
    title.title = str(t.description) || str(t.title);
    meta.firstChild.textContent = str(t.assignee) || 'unassigned';
    meta.lastChild.textContent = id;
    if (t.approvalStatus === 'pending_approval' || t.approvalStatus === 'pending' || t.pendingChange) {
      c.insertBefore(el('div.badge.warn', { text: t.pendingChange ? 'change awaits approval' : 'awaits approval' }), actions);
    } else if (t.approvalStatus === 'rejected') {
      c.insertBefore(el('div.badge.bad', { text: 'rejected' }), actions);
    }
    if (blocked.has(t.status) && t.blockedReason) c.insertBefore(el('div.reason', { text: str(t.blockedReason) }), actions);
    flowLines(t, c, actions);
    const d = drafts.get(id);
    actions.firstChild.value = d ? d.status : str(t.status);
    if (d) actions.children[1].value = d.reason;
    return c;
  }

  // taskName is a task's title, or its id when the State does not show it.
  const taskName = (id) => taskTitle.get(id) || str(id);

  // flowLines adds to card c, before its actions, what aipm judged of the
  // task's dependencies: ready; what it waits for (each blocker with a
  // button to stop waiting for it; a subtask someone else has; a task
  // that does not exist), with the CLI's words as its tooltip; the tasks
  // it holds up.
  function flowLines(t, c, actions) {
    const waits = arr(t.waits).filter(Boolean);
    if (t.ready) {
      c.classList.add('is-ready');
      c.insertBefore(el('div.badge.ok.ready', { text: 'ready', title: 'to do, approved, waiting for nothing' }), actions);
    }
    if (waits.length) {
      c.classList.add('is-waiting');
      const line = el('div.waits', { title: 'waits for ' + str(t.waitsText) }, el('span.label', { text: 'waits for' }));
      for (const w of waits) {
        const id = str(w.taskId);
        const chip = el('span.wait' + (w.subtask ? '.subtask' : '') + (w.status ? '' : '.missing'), { dataset: { on: id }, title: taskName(id) + ' (' + id + ')' },
          el('span.what', { text: (w.subtask ? 'subtask ' : '') + taskName(id) }),
          el('span.st', { text: w.status ? statusLabel(w.status) : 'does not exist' }));
        if (!w.subtask) chip.append(el('button.unwait', { type: 'button', text: '×', title: 'stop waiting for ' + id, ariaLabel: 'Stop waiting for ' + taskName(id) }));
        line.append(chip);
      }
      c.insertBefore(line, actions);
    }
    const by = arr(t.waitedBy).map(str);
    if (by.length) c.insertBefore(el('div.waited-by', { text: 'holds up ' + by.map(taskName).join(', '), title: by.join(', ') }), actions);
  }

  function renderBoard(s) {
    const board = $('#board');
    const by = {};
    for (const st of statuses) by[st] = [];
    const seen = new Set();
    const tasks = arr(s.tasks);
    for (const t of tasks) {
      if (!t) continue;
      seen.add(str(t.id));
      (by[t.status] || (by[t.status] = [])).push(t);
    }
    for (const id of drafts.keys()) if (!seen.has(id)) drafts.delete(id);
    const f = document.createDocumentFragment();
    const cols = statuses.concat(Object.keys(by).filter((k) => !statuses.includes(k)));
    for (const st of cols) {
      const list = sortTasks(by[st], st);
      const cards = el('div.cards');
      for (const t of list) cards.append(card(t));
      if (!list.length) cards.append(el('div.empty', { text: 'nothing' }));
      f.append(el('div.column' + (closed.has(st) ? '.closed' : ''), { dataset: { status: st } },
        el('h3', null, el('span', { text: statusLabel(st) }), el('span.count', { text: String(list.length) })),
        cards));
    }
    board.replaceChildren(f);
    $('#n-tasks').textContent = String(tasks.length);
  }

  // ---- dependencies: a graph the page lays out itself (inline SVG, no
  // library): each task that waits for another or is waited for is a box,
  // in columns by how many tasks come before it, and each dependency an
  // arrow from the task waited for to the one that waits (dashed: a
  // subtask its parent waits for; faint: a blocker already done) ----
  const SVGNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...kids) {
    const n = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null) n.setAttribute(k, String(attrs[k]));
    for (const c of kids) if (c) n.append(c);
    return n;
  }
  const GRAPH = { maxNodes: 120, w: 184, h: 40, gapX: 56, gapY: 12, pad: 8, chars: 27 };

  // graphOf is the dependencies among the State's tasks: the edges (the
  // open tasks' first, so that they are drawn when not all fit) and the
  // tasks they join, in the State's order.
  function graphOf(tasks) {
    const edges = [];
    for (const t of tasks) {
      const id = str(t.id);
      const holding = new Set(arr(t.waits).filter((w) => w && !w.subtask).map((w) => str(w.taskId)));
      for (const b of arr(t.blockedBy).map(str)) edges.push({ from: b, to: id, kind: holding.has(b) ? 'holds' : 'met', open: !closed.has(t.status) });
      for (const w of arr(t.waits)) if (w && w.subtask) edges.push({ from: str(w.taskId), to: id, kind: 'subtask', open: true });
    }
    edges.sort((a, b) => Number(b.open) - Number(a.open));
    const ids = [];
    const seen = new Set();
    for (const e of edges) {
      for (const n of [e.from, e.to]) if (!seen.has(n)) { seen.add(n); ids.push(n); }
    }
    return { edges, ids };
  }

  // layerOf is each task's column: 0 for one that waits for nothing drawn,
  // else one more than the furthest it waits for (a cycle, which only a
  // hand edit makes, is cut where it closes).
  function layerOf(ids, edges) {
    const preds = new Map(ids.map((id) => [id, []]));
    for (const e of edges) preds.get(e.to).push(e.from);
    const layer = new Map();
    const visiting = new Set();
    const depth = (id) => {
      if (layer.has(id)) return layer.get(id);
      if (visiting.has(id)) return -1;
      visiting.add(id);
      let d = 0;
      for (const p of preds.get(id)) d = Math.max(d, depth(p) + 1);
      visiting.delete(id);
      layer.set(id, d);
      return d;
    };
    for (const id of ids) depth(id);
    return { layer, preds };
  }

  // groupsOf splits the tasks into the groups the dependencies join (each
  // drawn as its own band), in the order of their first task.
  function groupsOf(ids, edges) {
    const root = new Map(ids.map((id) => [id, id]));
    const find = (id) => { while (root.get(id) !== id) { root.set(id, root.get(root.get(id))); id = root.get(id); } return id; };
    for (const e of edges) root.set(find(e.from), find(e.to));
    const groups = new Map();
    for (const id of ids) {
      const r = find(id);
      if (!groups.has(r)) groups.set(r, []);
      groups.get(r).push(id);
    }
    return [...groups.values()];
  }

  // placeOf puts each task in its column, ordered by where the tasks it
  // waits for are (fewer crossing arrows), each group of tasks below the
  // one before, and returns each box's corner and the picture's size.
  function placeOf(ids, edges) {
    const { layer, preds } = layerOf(ids, edges);
    const pos = new Map();
    let top = GRAPH.pad, wide = 0;
    for (const group of groupsOf(ids, edges)) {
      const cols = [];
      for (const id of group) (cols[layer.get(id)] || (cols[layer.get(id)] = [])).push(id);
      const row = new Map();
      cols.forEach((col, i) => {
        if (i > 0) {
          const at = (id) => { const ps = preds.get(id).filter((p) => row.has(p)); return ps.length ? ps.reduce((a, p) => a + row.get(p), 0) / ps.length : 1e9; };
          col.sort((a, b) => at(a) - at(b));
        }
        col.forEach((id, r) => row.set(id, r));
      });
      for (const id of group) pos.set(id, { x: GRAPH.pad + layer.get(id) * (GRAPH.w + GRAPH.gapX), y: top + row.get(id) * (GRAPH.h + GRAPH.gapY) });
      const tall = Math.max(...cols.map((c) => (c ? c.length : 0)));
      top += tall * (GRAPH.h + GRAPH.gapY) + GRAPH.gapY;
      wide = Math.max(wide, cols.length);
    }
    return { pos, width: 2 * GRAPH.pad + wide * GRAPH.w + (wide - 1) * GRAPH.gapX, height: top - 2 * GRAPH.gapY + GRAPH.pad };
  }

  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

  function graphNode(id, t, p) {
    const sub = t ? statusLabel(t.status) + (t.ready ? ' · ready' : arr(t.waits).length ? ' · waiting' : '') : 'not on the board';
    const g = svg('g', { class: 'node' + (t && t.ready ? ' ready' : '') + (t && arr(t.waits).length ? ' waiting' : ''), 'data-task-id': id, 'data-status': t ? str(t.status) : '', transform: 'translate(' + p.x + ',' + p.y + ')', tabindex: 0 },
      svg('title'), svg('rect', { width: GRAPH.w, height: GRAPH.h, rx: 6 }),
      svg('text', { x: 8, y: 16, class: 'name' }), svg('text', { x: 8, y: 32, class: 'sub' }));
    g.children[0].textContent = (t ? str(t.title) + ' · ' : '') + sub + ' · ' + id;
    g.children[2].textContent = clip(t ? str(t.title) : id, GRAPH.chars);
    g.children[3].textContent = sub;
    return g;
  }

  function graphEdge(e, a, b) {
    const x1 = a.x + GRAPH.w, y1 = a.y + GRAPH.h / 2, x2 = b.x, y2 = b.y + GRAPH.h / 2;
    const d = x2 > x1
      ? 'M' + x1 + ' ' + y1 + ' C' + (x1 + GRAPH.gapX / 2) + ' ' + y1 + ',' + (x2 - GRAPH.gapX / 2) + ' ' + y2 + ',' + x2 + ' ' + y2
      : 'M' + x1 + ' ' + y1 + ' C' + (x1 + 40) + ' ' + (y1 + 60) + ',' + (x2 - 40) + ' ' + (y2 + 60) + ',' + x2 + ' ' + y2; // back: a cycle
    return svg('path', { class: 'edge ' + e.kind, d, 'data-from': e.from, 'data-to': e.to, 'marker-end': 'url(#dep-arrow)' });
  }

  function renderGraph(s) {
    const tasks = arr(s.tasks).filter((t) => t && t.id);
    const byId = new Map(tasks.map((t) => [str(t.id), t]));
    let { edges, ids } = graphOf(tasks);
    const left = Math.max(0, ids.length - GRAPH.maxNodes);
    if (left) {
      ids = ids.slice(0, GRAPH.maxNodes);
      const kept = new Set(ids);
      edges = edges.filter((e) => kept.has(e.from) && kept.has(e.to));
    }
    const box = $('#graph');
    if (!ids.length) {
      box.replaceChildren(el('div.empty', { text: 'No task waits for another.' }));
    } else {
      const { pos, width, height } = placeOf(ids, edges);
      const pic = svg('svg', { width, height, viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': 'The tasks and what each waits for' },
        svg('defs', null, svg('marker', { id: 'dep-arrow', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto' }, svg('path', { d: 'M0,0 L8,4 L0,8 z' }))));
      for (const e of edges) pic.append(graphEdge(e, pos.get(e.from), pos.get(e.to)));
      for (const id of ids) pic.append(graphNode(id, byId.get(id), pos.get(id)));
      box.replaceChildren(pic);
      if (left) box.append(el('div.muted', { text: left + ' more tasks with dependencies are not drawn' }));
    }
    const f = document.createDocumentFragment();
    for (const c of arr(s.cycles)) f.append(el('div.badge.bad.cycle', { text: str(c) }));
    $('#cycles').replaceChildren(f);
    $('#n-ready').textContent = (Number(s.ready) || 0) + ' ready';
    $('#n-waiting').textContent = (Number(s.waiting) || 0) + ' waiting';
  }

  // ---- approvals ----
  function renderApprovals(s) {
    const f = document.createDocumentFragment();
    const list = arr(s.approvals);
    for (const t of list) {
      if (!t) continue;
      const id = str(t.id);
      let what;
      const pc = t.pendingChange;
      if (pc) {
        const bits = [];
        if (pc.status) bits.push('status → ' + statusLabel(pc.status));
        if (pc.description !== undefined && pc.description !== null) bits.push('new description');
        what = (str(pc.by) || 'someone') + ' asks: ' + (bits.join(', ') || 'a change');
      } else {
        what = 'new task' + (t.requester ? ' from ' + t.requester : '') + (t.assignee ? ' for ' + t.assignee : '');
      }
      const reason = el('input.reason', { type: 'text', placeholder: 'reason (optional)', value: approvalDrafts.get(id) || '', ariaLabel: 'Reason' });
      f.append(el('div.item.approval', { dataset: { taskId: id } },
        el('div.row', null, el('span.title', { text: str(t.title) }), el('span.priority.pill', { text: str(t.priority) })),
        el('div.sub', { text: what }),
        t.description && !pc ? el('div.desc', { text: str(t.description) }) : null,
        el('div.actions', null, reason,
          el('button.approve', { type: 'button', text: 'Approve' }),
          el('button.reject', { type: 'button', text: 'Reject' }))));
    }
    if (!list.length) f.append(el('div.empty', { text: 'Nothing waits for a decision.' }));
    $('#approvals').replaceChildren(f);
    $('#n-approvals').textContent = list.length ? String(list.length) : '';
    $('#n-approvals').classList.toggle('hot', list.length > 0);
  }

  // ---- agents ----
  function renderAgents(s) {
    const f = document.createDocumentFragment();
    const list = arr(s.agents);
    for (const a of list) {
      if (!a) continue;
      const ses = arr(a.sessions), runs = arr(a.runs);
      const human = a.type === 'human' || humans.includes(a.id);
      const live = ses.length > 0 || runs.length > 0;
      const sesText = ses.length
        ? ses.map((x) => str(x.purpose) + (x.taskId ? ' ' + x.taskId : '')).join(', ')
        : 'no session';
      const runText = runs.length
        ? runs.map((r) => str(r.purpose) + ' pid ' + str(r.pid) + (r.startedAt ? ' · ' + age(r.startedAt) : '')).join(', ')
        : 'no process';
      const um = Number(a.unreadMessages) || 0, un = Number(a.unreadNotifications) || 0;
      const unread = el('span.unread', { text: um + ' unread' + (un ? ' · ' + un + ' notif' : ''), title: um + ' unread messages, ' + un + ' unread notifications' });
      if (um || un) unread.classList.add('hot');
      const item = el('div.item.agent', { dataset: { agentId: str(a.id) } },
        el('div.row', null,
          el('span.dot' + (live ? '.on' : ''), { title: live ? 'live' : 'idle' }),
          el('span.name', { text: str(a.id) }),
          el('span.pill' + (human ? '.human' : '.ai'), { text: human ? 'human' : str(a.type) || 'ai' }),
          a.role ? el('span.role', { text: str(a.role) }) : null,
          el('span.grow'),
          unread),
        el('div.sub', null,
          el('span.sessions', { text: sesText, title: ses.map((x) => str(x.id) + ' seen ' + age(x.lastSeenAt) + ' ago').join('\n') }),
          el('span.runs', { text: runText, title: runs.map((r) => str(r.reason) + (r.logLine ? '\nits log ends: ' + str(r.logLine) : '')).join('\n') })),
        ...arr(a.problems).map((p) => el('div.problem', { text: str(p.problem), title: str(p.purpose) + ' run ' + str(p.state).replace(/_/g, ' ') + (p.endedAt ? ' ' + age(p.endedAt) + ' ago' : '') + (p.logLine ? '\nits log ends: ' + str(p.logLine) : '') })),
        a.parent ? el('div.parent', { text: 'reports to ' + a.parent }) : null);
      if (!live) item.classList.add('idle');
      f.append(item);
    }
    if (!list.length) f.append(el('div.empty', { text: 'No agents.' }));
    $('#agents').replaceChildren(f);
    $('#n-agents').textContent = String(list.length);
  }

  // ---- chats ----
  // Scroll positions are read before any section is rebuilt (reading them
  // later would force a layout of the whole page) and written back only
  // where the user scrolled away from the default.
  function readScroll() {
    const board = {}, chats = {};
    for (const b of document.querySelectorAll('#board .column > .cards')) if (b.scrollTop) board[b.parentNode.dataset.status] = b.scrollTop;
    for (const m of document.querySelectorAll('#chats .chat > .msgs')) if (m.scrollTop) chats[m.parentNode.dataset.pair] = m.scrollTop;
    return { board, chats };
  }
  function writeScroll(sc) {
    for (const st in sc.board) { const b = document.querySelector('#board .column[data-status="' + CSS.escape(st) + '"] > .cards'); if (b) b.scrollTop = sc.board[st]; }
    for (const p in sc.chats) { const m = document.querySelector('#chats .chat[data-pair="' + CSS.escape(p) + '"] > .msgs'); if (m) m.scrollTop = sc.chats[p]; }
  }

  // seenLine says when the receiver saw a message: surfaced (handed to a
  // session or told by a notice) and read, each with how.
  function seenLine(m) {
    if (m.seenBy) {
      const who = Object.keys(m.seenBy).sort();
      return el('div.seen', { text: '↳ ' + who.map((r) => {
        const s = m.seenBy[r] || {};
        return r + ': ' + (s.readAt ? 'read ' + clock(s.readAt) : s.surfacedAt ? 'surfaced ' + clock(s.surfacedAt) : 'not seen yet');
      }).join(' · ') });
    }
    const parts = [];
    if (m.surfacedAt) parts.push('surfaced ' + clock(m.surfacedAt) + ' (' + str(m.surfacedVia) + ')');
    if (m.readAt) parts.push('read ' + clock(m.readAt) + ' (' + str(m.readVia) + ')');
    if (!parts.length) return el('div.seen.unseen', { text: 'not seen yet' });
    return el('div.seen', { text: '↳ ' + parts.join(', ') });
  }

  function renderChats(s) {
    const box = $('#chats');
    const chats = arr(s.chats).filter((c) => c && arr(c.agents).length).map((c) => {
      const msgs = arr(c.messages);
      const last = msgs.length ? parseT(msgs[msgs.length - 1].createdAt) : 0;
      return { c, msgs, last };
    }).sort((a, b) => b.last - a.last);
    const f = document.createDocumentFragment();
    for (const { c, msgs } of chats) {
      const pair = arr(c.agents).map(str).sort();
      // Reply goes to the non-human party (of two, the last sender).
      const bots = pair.filter((p) => !humans.includes(p));
      const lastFrom = msgs.length ? str(msgs[msgs.length - 1].senderId) : '';
      const other = (bots.length > 1 && bots.includes(lastFrom) ? lastFrom : bots[0]) ||
        pair.find((p) => p !== $('#act-as').value) || pair[0];
      const list = el('div.msgs-in');
      for (const m of msgs) {
        if (!m) continue;
        const from = str(m.senderId);
        const msg = el('div.msg', { dataset: { msgId: str(m.id) } },
          el('div.msg-head', null,
            el('span.from', { text: from }),
            m.conversationId ? el('span.tag', { text: 'conversation', title: str(m.conversationId) }) : null,
            m.kind ? el('span.tag', { text: str(m.kind) }) : null,
            el('span.time', { text: clock(m.createdAt), title: fullTime(m.createdAt) })),
          el('div.content', { text: str(m.content) }),
          seenLine(m));
        msg.classList.add(humans.includes(from) ? 'by-human' : from === 'system' ? 'by-system' : 'by-ai');
        list.append(msg);
      }
      f.append(el('div.chat', { dataset: { pair: pair.join('|') } },
        el('div.chat-head', null,
          el('span.pair', { text: pair.join(pair.length > 2 ? ', ' : ' ↔ ') }),
          el('span.count', { text: String(msgs.length) }),
          el('span.grow'),
          el('button.reply', { type: 'button', text: 'Reply', dataset: { to: other } })),
        el('div.msgs', null, list)));
    }
    if (!chats.length) f.append(el('div.empty', { text: 'No messages yet.' }));
    box.replaceChildren(f);
    $('#n-chats').textContent = String(chats.length);
  }

  // ---- leases ----
  // Each live lease: holder, exclusive or shared, its paths, reason, task
  // and when it ends; a lease that conflicts with another's (only a hand
  // edit of leases.json makes one) is marked. Break ends every lease on its
  // paths, whoever holds it, and tells each holder the reason (aipm leases
  // break).
  function renderLeases(s) {
    const list = arr(s.leases).filter(Boolean);
    const f = document.createDocumentFragment();
    const live = new Set();
    let conflicted = 0;
    for (const l of list) {
      const id = str(l.id);
      live.add(id);
      const paths = el('div.paths');
      for (const p of arr(l.paths)) paths.append(el('span.path', { text: str(p) }));
      const conflicts = arr(l.conflicts).filter(Boolean);
      if (conflicts.length) conflicted++;
      const ends = left(l.expiresAt);
      const reason = el('input.reason', { type: 'text', placeholder: 'why break it (its holder is told)', value: leaseDrafts.get(id) || '', ariaLabel: 'Reason to break the lease', maxLength: 500 });
      f.append(el('div.item.lease', { dataset: { leaseId: id, holder: str(l.holder) } },
        el('div.row', null,
          el('span.name', { text: str(l.holder) }),
          el('span.pill.' + (l.exclusive ? 'exclusive' : 'shared'), { text: l.exclusive ? 'exclusive' : 'shared' }),
          el('span.age.expiry', { text: ends ? 'ends in ' + ends : 'ending', title: 'until ' + fullTime(l.expiresAt) })),
        paths,
        l.reason ? el('div.sub.why', { text: str(l.reason) }) : null,
        ...conflicts.map((c) => el('div.badge.bad.conflict', { dataset: { leaseId: str(c.leaseId) },
          text: 'conflicts with ' + str(c.holder) + "'s lease on " + str(c.against) + ' (' + str(c.path) + ')' })),
        el('div.meta', null,
          el('span', { text: id }),
          l.taskId ? el('span.task', { text: 'task ' + (taskTitle.get(l.taskId) || l.taskId), title: str(l.taskId) }) : null,
          el('span', { text: 'taken ' + age(l.createdAt) + ' ago', title: fullTime(l.createdAt) }),
          l.session ? el('span', { text: l.keep ? 'outlives its session' : 'ends with its session' }) : null),
        el('div.actions', null, reason,
          el('button.break', { type: 'button', text: 'Break', title: 'End this lease; its holder is told the reason' }))));
    }
    for (const id of leaseDrafts.keys()) if (!live.has(id)) leaseDrafts.delete(id);
    if (!list.length) f.append(el('div.empty', { text: 'No live leases.' }));
    $('#leases').replaceChildren(f);
    $('#n-leases').textContent = list.length ? String(list.length) : '';
    $('#n-leases').classList.toggle('hot', conflicted > 0);
  }

  // ---- conversations, delegations, triggers, timeline ----
  const OPEN_CONV = { pending: 1, active: 2, terminating: 1 };
  function renderConversations(s) {
    const list = arr(s.conversations).filter(Boolean).slice()
      .sort((a, b) => (OPEN_CONV[b.state] || 0) - (OPEN_CONV[a.state] || 0) || parseT(b.createdAt) - parseT(a.createdAt));
    const f = document.createDocumentFragment();
    for (const c of list) {
      const max = Number(c.maxTurns) || 0, turns = Number(c.turns) || 0;
      const bar = el('span.bar', null, el('span.fill'));
      bar.firstChild.style.width = (max ? Math.min(100, Math.round(100 * turns / max)) : 0) + '%';
      f.append(el('div.item.conversation', { dataset: { conversationId: str(c.id) } },
        el('div.row', null,
          el('span.parties', { text: str(c.initiatorId) + ' → ' + str(c.participantId) }),
          el('span.state.st-' + (str(c.state) || 'unknown'), { text: str(c.state) }),
          el('span.grow'),
          el('span.turns', { text: turns + '/' + max, title: 'turns / max turns' }), bar),
        el('div.sub', { text: str(c.purpose) || '(no purpose)' }),
        el('div.meta', null,
          el('span', { text: str(c.id) }),
          c.taskId ? el('span', { text: 'task ' + (taskTitle.get(c.taskId) || c.taskId) }) : null,
          el('span', { text: age(c.createdAt) + ' ago' }),
          c.endReason ? el('span', { text: 'ended: ' + c.endReason }) : null)));
    }
    if (!list.length) f.append(el('div.empty', { text: 'No conversations.' }));
    $('#conversations').replaceChildren(f);
    $('#n-conversations').textContent = String(list.length);
  }

  function renderDelegations(s) {
    const conv = new Map(arr(s.conversations).filter(Boolean).map((c) => [c.id, c]));
    const list = arr(s.delegations).filter(Boolean).slice()
      .sort((a, b) => parseT(b.createdAt) - parseT(a.createdAt));
    const f = document.createDocumentFragment();
    for (const d of list) {
      const ids = arr(d.conversationIds).length ? arr(d.conversationIds) : arr(d.conversations);
      const convs = el('div.convs');
      for (const id of ids) {
        const c = conv.get(id);
        convs.append(el('span.conv-ref', {
          text: c ? str(c.participantId || id) + ' · ' + str(c.state) + ' ' + str(c.turns) + '/' + str(c.maxTurns) : str(id),
          title: str(id),
        }));
      }
      if (!ids.length) convs.append(el('span.muted', { text: 'no conversation yet' }));
      f.append(el('div.item.delegation', { dataset: { delegationId: str(d.id) } },
        el('div.row', null,
          el('span.task', { text: taskTitle.get(d.taskId) || str(d.taskId), title: str(d.taskId) }),
          el('span.state.st-' + (str(d.status) || 'unknown'), { text: str(d.status) })),
        el('div.sub', { text: str(d.agentId) + (d.targetAgentId ? ' → ' + d.targetAgentId : '') + (d.purpose ? ': ' + d.purpose : '') }),
        el('div.row', null, el('span.arrow', { text: '⇢' }), convs)));
    }
    if (!list.length) f.append(el('div.empty', { text: 'No delegations.' }));
    $('#delegations').replaceChildren(f);
    $('#n-delegations').textContent = String(list.length);
  }

  function renderTriggers(s) {
    const list = arr(s.triggers).filter(Boolean);
    const f = document.createDocumentFragment();
    for (const t of list) {
      f.append(el('div.item.trigger', null,
        el('div.row', null,
          el('span.name', { text: str(t.agentId) }),
          el('span.pill', { text: str(t.purpose) }),
          el('span.grow'),
          el('span.age', { text: age(t.createdAt), title: fullTime(t.createdAt) })),
        t.reason || t.taskId ? el('div.sub', { text: str(t.reason) + (t.taskId ? ' · ' + (taskTitle.get(t.taskId) || t.taskId) : '') }) : null));
    }
    if (!list.length) f.append(el('div.empty', { text: 'No pending triggers.' }));
    $('#triggers').replaceChildren(f);
    $('#n-triggers').textContent = String(list.length);
  }

  function renderTimeline(s) {
    const list = arr(s.timeline).filter(Boolean).slice(0, 300);
    const f = document.createDocumentFragment();
    for (const e of list) {
      const li = el('li.event', null,
        el('span.time', { text: clock(e.at), title: fullTime(e.at) }),
        el('span.what.w-' + (str(e.what) || 'x'), { text: str(e.what) }),
        el('span.name', { text: str(e.agentId) }),
        el('span.pill', { text: str(e.purpose) }),
        e.pid ? el('span.pid', { text: 'pid ' + e.pid }) : null,
        e.reason ? el('span.why', { text: str(e.reason) }) : null);
      f.append(li);
    }
    if (!list.length) f.append(el('li.empty', { text: 'Nothing happened yet.' }));
    $('#timeline').replaceChildren(f);
    $('#n-timeline').textContent = String(arr(s.timeline).length);
  }

  // ---- render ----
  function render(s) {
    if (!s || typeof s !== 'object') return;
    state = s;
    nowMs = parseT(s.now) || Date.now();
    humans = arr(s.humans).map(str);
    agentType.clear();
    for (const a of arr(s.agents)) if (a) agentType.set(a.id, a.type);
    taskTitle.clear();
    for (const t of arr(s.tasks)) if (t) taskTitle.set(t.id, t.title);

    // Remember a focused input inside a rebuilt section to restore it after.
    const act = document.activeElement;
    let focus = null;
    if (act && act !== document.body) {
      const holder = act.closest('[data-task-id], [data-lease-id]');
      const sec = act.closest('#board, #approvals, #leases');
      if (holder && sec) {
        const key = holder.dataset.taskId !== undefined ? 'task-id' : 'lease-id';
        focus = { sec: sec.id, key, id: holder.dataset.taskId !== undefined ? holder.dataset.taskId : holder.dataset.leaseId, cls: act.classList[0], start: act.selectionStart, end: act.selectionEnd };
      }
    }

    const scroll = readScroll();
    takeVocabulary(s);
    fillSelects(s);
    renderBoard(s);
    renderGraph(s);
    renderApprovals(s);
    renderAgents(s);
    renderChats(s);
    renderConversations(s);
    renderDelegations(s);
    renderTriggers(s);
    renderTimeline(s);
    renderLeases(s);
    writeScroll(scroll);

    if (focus && focus.cls) {
      const n = document.querySelector('#' + focus.sec + ' [data-' + focus.key + '="' + CSS.escape(focus.id) + '"] .' + CSS.escape(focus.cls));
      if (n) {
        n.focus({ preventScroll: true });
        if (typeof focus.start === 'number' && n.setSelectionRange) {
          try { n.setSelectionRange(focus.start, focus.end); } catch (_) { /* not a text input */ }
        }
      }
    }
    if (s.project) $('#project').textContent = str(s.project);
    document.body.dataset.eventId = str(s.eventId);
    document.body.dataset.renderedAt = String(performance.now());
  }

  // ---- actions ----
  const csrf = () => { const m = $('meta[name="csrf-token"]'); return m ? m.content : ''; };
  function showError(msg) {
    const e = $('#error');
    e.textContent = msg;
    e.title = msg; // the whole sentence, where the header cuts it
    e.classList.toggle('shown', !!msg);
  }
  async function post(path, body, btn) {
    body.as = $('#act-as').value;
    if (btn) btn.disabled = true;
    try {
      const r = await fetch(path, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf() },
        body: JSON.stringify(body),
      });
      let j = null;
      try { j = await r.json(); } catch (_) { j = null; }
      if (!r.ok || !j || j.error) {
        showError((j && j.error) || 'request failed: HTTP ' + r.status);
        return null;
      }
      showError('');
      return j;
    } catch (err) {
      showError('request failed: ' + (err && err.message ? err.message : err));
      return null;
    } finally {
      if (btn) btn.disabled = false;
    }
  }

  function wire() {
    const board = $('#board');
    const draftOf = (cardEl) => {
      const id = cardEl.dataset.taskId;
      drafts.set(id, { status: cardEl.querySelector('select.set-status').value, reason: cardEl.querySelector('input.reason').value });
    };
    board.addEventListener('input', (e) => { const c = e.target.closest('.card'); if (c) draftOf(c); });
    board.addEventListener('change', (e) => { const c = e.target.closest('.card'); if (c) draftOf(c); });
    board.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && e.target.matches('input.reason')) {
        e.preventDefault();
        const b = e.target.closest('.card').querySelector('button.apply-status');
        if (b) b.click();
      }
    });
    board.addEventListener('click', async (e) => {
      const u = e.target.closest('button.unwait');
      if (u) {
        await post('/api/tasks/depend', { taskId: u.closest('.card').dataset.taskId, blockedBy: [u.closest('.wait').dataset.on], change: 'remove' }, u);
        return;
      }
      const b = e.target.closest('button.apply-status');
      if (!b) return;
      const c = b.closest('.card');
      const id = c.dataset.taskId;
      const status = c.querySelector('select.set-status').value;
      const reason = c.querySelector('input.reason').value;
      const ok = await post('/api/tasks/status', { taskId: id, status, reason }, b);
      if (ok) {
        drafts.delete(id);
        const cur = board.querySelector('.card[data-task-id="' + CSS.escape(id) + '"] input.reason');
        if (cur) cur.value = '';
      }
    });

    const appr = $('#approvals');
    appr.addEventListener('input', (e) => {
      const a = e.target.closest('.approval');
      if (a && e.target.matches('input.reason')) approvalDrafts.set(a.dataset.taskId, e.target.value);
    });
    appr.addEventListener('click', async (e) => {
      const b = e.target.closest('button.approve, button.reject');
      if (!b) return;
      const a = b.closest('.approval');
      const id = a.dataset.taskId;
      const r = a.querySelector('input.reason');
      const ok = await post('/api/tasks/decision', {
        taskId: id, approval: b.classList.contains('approve') ? 'approved' : 'rejected', reason: r ? r.value : '',
      }, b);
      if (ok) approvalDrafts.delete(id);
    });

    const leases = $('#leases');
    leases.addEventListener('input', (e) => {
      const l = e.target.closest('.lease');
      if (l && e.target.matches('input.reason')) leaseDrafts.set(l.dataset.leaseId, e.target.value);
    });
    leases.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && e.target.matches('input.reason')) {
        e.preventDefault();
        const b = e.target.closest('.lease').querySelector('button.break');
        if (b) b.click();
      }
    });
    leases.addEventListener('click', async (e) => {
      const b = e.target.closest('button.break');
      if (!b) return;
      const l = b.closest('.lease');
      const id = l.dataset.leaseId;
      const lease = arr(state && state.leases).find((x) => x && str(x.id) === id);
      if (!lease) return;
      const r = l.querySelector('input.reason');
      const ok = await post('/api/leases/break', { leaseId: id, reason: r ? r.value : '' }, b);
      if (ok) leaseDrafts.delete(id);
    });

    const send = $('#send-form');
    send.addEventListener('submit', async (e) => {
      e.preventDefault();
      const content = send.elements.content.value;
      if (!content.trim()) return;
      const ok = await post('/api/send', { to: send.elements.to.value, content }, send.querySelector('button[type=submit]'));
      if (ok) send.elements.content.value = '';
    });
    send.elements.content.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); send.requestSubmit(); }
    });
    $('#chats').addEventListener('click', (e) => {
      const b = e.target.closest('button.reply');
      if (!b) return;
      const to = send.elements.to;
      const v = b.dataset.to;
      if (![...to.options].some((o) => o.value === v)) to.append(el('option', { value: v, text: v }));
      to.value = v;
      send.elements.content.focus();
    });

    const tf = $('#task-form');
    tf.addEventListener('submit', async (e) => {
      e.preventDefault();
      const title = tf.elements.title.value.trim();
      if (!title) return;
      const after = tf.elements.after.value;
      const ok = await post('/api/tasks', {
        title, assignee: tf.elements.assignee.value, priority: tf.elements.priority.value, description: '', blockedBy: after ? [after] : [],
      }, tf.querySelector('button[type=submit]'));
      if (ok) { tf.elements.title.value = ''; tf.elements.after.value = ''; }
    });

    // The depend form makes a task wait for another, or stop waiting (aipm
    // task depend --on [--remove]); a cycle is refused and #error says so.
    const df = $('#depend-form');
    const depend = (change, btn) => post('/api/tasks/depend', { taskId: df.elements.task.value, blockedBy: [df.elements.on.value], change }, btn);
    df.addEventListener('submit', (e) => { e.preventDefault(); depend('add', df.querySelector('button.add-dep')); });
    df.querySelector('button.remove-dep').addEventListener('click', (e) => depend('remove', e.currentTarget));
    // A box of the graph shows its card.
    $('#graph').addEventListener('click', (e) => {
      const g = e.target.closest('g.node');
      const c = g && $('#board .card[data-task-id="' + CSS.escape(g.dataset.taskId) + '"]');
      if (!c) return;
      c.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      c.classList.remove('flash');
      void c.offsetWidth;
      c.classList.add('flash');
    });
  }

  // ---- live updates ----
  function setStatus(txt) {
    const s = $('#status');
    if (s.textContent !== txt) s.textContent = txt;
    s.classList.toggle('live', txt === 'live');
  }
  let es = null;
  function connect() {
    if (typeof EventSource === 'undefined') return;
    es = new EventSource('/api/events');
    es.addEventListener('open', () => setStatus('live'));
    es.addEventListener('error', () => {
      setStatus('reconnecting');
      // EventSource retries by itself unless the server refused it: then start over.
      if (es.readyState === 2) { es.close(); setTimeout(connect, 3000); }
    });
    es.addEventListener('state', (e) => {
      let s;
      try { s = JSON.parse(e.data); } catch (_) { return; }
      render(s);
      setStatus('live');
    });
  }

  window.aipmRender = render;
  window.aipmState = () => state;
  const start = () => { wire(); connect(); };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
