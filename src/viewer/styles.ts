/** The page's stylesheet (inline: the page loads nothing from anywhere, so it works offline). */
export const VIEWER_CSS = `
:root { color-scheme: light dark; --ok: #1a7f37; --err: #cf222e; --warn: #9a6700; --dim: #6e7781; --line: #d0d7de; --add: #dafbe1; --del: #ffebe9; }
@media (prefers-color-scheme: dark) { :root { --line: #30363d; --add: #12361f; --del: #4a1c1f; --dim: #8b949e; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; }
header { display: flex; gap: 1em; align-items: baseline; padding: .6em 1em; border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.1em; margin: 0; }
#mode { color: var(--dim); }
main { display: flex; align-items: flex-start; }
nav { width: 22em; flex: none; padding: .6em; border-right: 1px solid var(--line); min-height: calc(100vh - 3em); }
nav h2 { font-size: 1em; display: inline; margin-right: 1em; }
nav ul { list-style: none; padding: 0; }
nav li.current .session-link { border-color: currentColor; }
.session-link { display: block; width: 100%; text-align: left; margin: .25em 0; padding: .35em; border: 1px solid var(--line); border-radius: 4px; background: none; color: inherit; font: inherit; cursor: pointer; }
.session-link .goal { display: block; color: var(--dim); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#session { flex: 1; min-width: 0; padding: .6em 1em; }
#summary h2 { font-size: 1.05em; margin: .2em 0; display: inline-block; margin-right: .6em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3em 0; font: 12.5px/1.4 ui-monospace, monospace; }
.goal { font-weight: 600; }
.meta, .offset, .dim { color: var(--dim); font-size: .9em; }
.verdict { margin: .4em 0; padding: .3em .5em; border-radius: 4px; border: 1px solid var(--line); }
.verdict.ok { border-color: var(--ok); color: var(--ok); }
.verdict.error { border-color: var(--err); color: var(--err); font-weight: 600; }
#timeline { list-style: none; padding: 0; margin: .6em 0; }
.item { border-left: 3px solid var(--line); padding: .25em .6em; margin: .35em 0; }
.item .head { display: flex; gap: .6em; align-items: baseline; flex-wrap: wrap; }
.item .title { font-weight: 600; }
.item.line .title { font-weight: normal; }
.item.turn { border-left-color: #0969da; margin-top: 1em; }
.item.model { border-left-color: #8250df; }
.item.model.pending .title::after { content: " …"; }
.item.call { border-left-color: var(--warn); }
.item.error, .item.outcome.stopped, .item.outcome.cancelled, .item.outcome.review_required { border-left-color: var(--err); }
.item.ok, .item.outcome.verified { border-left-color: var(--ok); }
.item.outcome .title { font-size: 1.05em; }
.status, .session-status { font-size: .85em; padding: 0 .4em; border-radius: 3px; border: 1px solid currentColor; white-space: nowrap; margin-left: .4em; }
.status.ok, .status.approved, .session-status.verified, .session-status.finished { color: var(--ok); }
.status.error, .status.denied, .status.declined, .status.timeout, .status.cancelled, .status.unknown, .status.invalid { color: var(--err); }
.status.running, .status.proposed, .status.awaiting_approval, .session-status.running, .session-status.awaiting_approval { color: var(--warn); }
.path { font-family: ui-monospace, monospace; font-size: .9em; }
.diff .line { display: block; }
.diff .add { background: var(--add); }
.diff .del { background: var(--del); }
.diff .hunk { color: var(--dim); }
.diff .file { font-weight: 600; }
.label { color: var(--dim); font-size: .85em; margin-top: .3em; }
.item.call.denied { border-left-color: var(--err); }
.item.call.denied .call-args pre { text-decoration: line-through; opacity: .7; }
.denied-marker { color: var(--err); font-weight: 600; }
.item.approval.pending { border-left-color: var(--warn); }
#totals { display: flex; flex-wrap: wrap; gap: .4em 1.2em; margin: .4em 0; }
#totals .value { font-weight: 600; margin-right: .3em; }
#totals .label { font-size: .9em; }
.output { max-height: 24em; overflow: auto; border: 1px solid var(--line); padding: .3em; }
.check { display: flex; gap: .6em; align-items: baseline; }
#approvals { border: 2px solid var(--warn); border-radius: 6px; padding: .4em .8em; margin: .6em 0; }
#approvals h3 { margin: .2em 0; font-size: 1em; }
.approval { border-top: 1px solid var(--line); padding: .4em 0; }
.approval .head { display: flex; gap: .6em; align-items: baseline; }
.approval .title { font-weight: 600; }
.buttons { display: flex; gap: .5em; }
.buttons button { font: inherit; padding: .25em .8em; cursor: pointer; }
#error { color: var(--err); margin: .4em 1em; }
#streaming { color: var(--dim); white-space: pre-wrap; }
body.static nav { display: none; }
#prompt { border-top: 1px solid var(--line); margin-top: 1em; padding-top: .6em; }
#prompt textarea { display: block; width: 100%; font: 12.5px/1.4 ui-monospace, monospace; margin: .3em 0; }
#prompt select { font: inherit; max-width: 24em; }
.pane-error { color: var(--err); font-weight: 600; }
.elsewhere { color: var(--warn); font-size: .85em; margin-left: .4em; }
.agent { border: 1px solid var(--line); border-radius: 4px; padding: .3em .6em; margin: .4em 0; }
.agent-head { display: flex; gap: .6em; align-items: baseline; flex-wrap: wrap; }
.agent-label { font-weight: 600; }
ol.timeline.child { list-style: none; padding: 0 0 0 .8em; margin: .3em 0; }
`;
