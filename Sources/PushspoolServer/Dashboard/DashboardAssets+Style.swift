extension DashboardAssets {
    /// One style sheet, system fonts only; a single column below 700 px (a phone at 390 px).
    static let style = #"""
:root { --fg: #1b1f24; --muted: #5b6470; --line: #d8dde3; --bg: #f5f7f9; --card: #fff; --accent: #1f5fbf;
  --ok: #1d7a3a; --bad: #b3261e; --warn: #8a5a00; --info: #1f5fbf; font-size: 15px; }
* { box-sizing: border-box; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); line-height: 1.4; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible { outline: 3px solid #ffb020; outline-offset: 2px; }
.top { display: flex; flex-wrap: wrap; gap: .5rem 1.2rem; align-items: center; padding: .6rem 1rem; background: #14243d; color: #fff; }
.top a { color: #fff; text-decoration: none; }
.brand { font-weight: 700; display: inline-flex; gap: .4rem; align-items: center; }
.top nav { display: flex; flex-wrap: wrap; gap: .2rem .9rem; }
.top nav a { padding: .2rem .1rem; border-bottom: 2px solid transparent; }
.top nav a[aria-current="page"] { border-bottom-color: #ffd24a; }
.who { margin-left: auto; font-size: .9rem; }
main { max-width: 1400px; margin: 0 auto; padding: 1rem; }
.bottom { text-align: center; color: var(--muted); font-size: .8rem; padding: .5rem; }
h1 { font-size: 1.4rem; margin: .2rem 0 .8rem; overflow-wrap: anywhere; }
h2 { font-size: 1.1rem; margin: 1.2rem 0 .5rem; }
h3 { font-size: 1rem; margin: 0 0 .4rem; overflow-wrap: anywhere; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .8rem 1rem; margin-bottom: 1rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 1rem; }
.muted { color: var(--muted); }
.grid.providers { grid-template-columns: repeat(auto-fit, minmax(min(100%, 440px), 1fr)); }
.recent-errors .reason { font-weight: 600; overflow-wrap: anywhere; } .recent-errors .meaning { font-size: .85rem; }
.error, .problem { color: var(--bad); }
.problem { font-size: .85rem; margin: .2rem 0 0; }
.notice { background: #e8f0fb; border: 1px solid #b9cdee; padding: .6rem .8rem; border-radius: 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
.state { display: inline-block; padding: .05rem .45rem; border-radius: 999px; font-size: .8rem; border: 1px solid currentColor; white-space: nowrap; }
.state::before { margin-right: .25rem; }
.state.running::before, .state.pausing::before { content: "▶"; }
.state.done { color: var(--ok); } .state.done::before { content: "✓"; }
.state.failed, .state.not-responding { color: var(--bad); } .state.failed::before, .state.not-responding::before { content: "✕"; }
.state.cancelled, .state.cancelling { color: var(--muted); } .state.cancelled::before, .state.cancelling::before { content: "■"; }
.state.paused { color: var(--warn); } .state.paused::before { content: "❚❚"; }
.state.waiting, .state.scheduled, .state.waiting-for-wave, .state.waiting-to-resume { color: var(--info); }
.state.waiting::before, .state.scheduled::before, .state.waiting-for-wave::before, .state.waiting-to-resume::before { content: "◷"; }
progress { width: 100%; height: .8rem; accent-color: var(--accent); }
.filters { display: flex; flex-wrap: wrap; gap: .6rem; align-items: end; margin-bottom: .8rem; }
.filters label, .field label { display: block; font-size: .8rem; color: var(--muted); }
input, select, textarea, button { font: inherit; }
input, select, textarea { padding: .35rem .45rem; border: 1px solid #aab3bd; border-radius: 5px; background: #fff; max-width: 100%; }
textarea { width: 100%; min-height: 4.5rem; }
button { padding: .4rem .9rem; border-radius: 5px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.quiet { background: transparent; color: inherit; border-color: currentColor; }
button.danger { background: var(--bad); border-color: var(--bad); }
button[disabled] { opacity: .55; cursor: default; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; margin: .6rem 0; }
.confirm { border: 2px solid var(--warn); background: #fff8e6; padding: .6rem .8rem; border-radius: 6px; margin: .6rem 0; }
.pager { display: flex; gap: .6rem; align-items: center; margin-top: .6rem; flex-wrap: wrap; }
.field { margin-bottom: .7rem; }
.field input[type=text], .field select { width: 100%; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 .7rem; }
fieldset label { display: inline-flex; gap: .25rem; margin-right: .8rem; align-items: center; }
pre.payload { background: #0f1720; color: #e6edf3; padding: .6rem; border-radius: 6px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; font-size: .85rem; }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: .2rem .9rem; }
.kv dt { color: var(--muted); } .kv dd { margin: 0; overflow-wrap: anywhere; }
.bar { display: inline-block; height: .7rem; background: var(--accent); border-radius: 2px; vertical-align: middle; }
svg.chart { width: 100%; max-width: 900px; height: auto; display: block; }
svg.chart text { font-size: 11px; fill: var(--muted); }
.legend { font-size: .85rem; display: flex; gap: 1rem; flex-wrap: wrap; }
.swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem; vertical-align: -1px; }
.swatch.delivered { background: var(--ok); } .swatch.failed { background: var(--bad); background-image: repeating-linear-gradient(45deg, transparent 0 2px, rgba(255,255,255,.6) 2px 4px); }
.timeline { list-style: none; padding: 0; margin: 0; border-left: 3px solid var(--line); }
.timeline li { padding: .2rem .6rem; position: relative; }
.timeline li::before { content: ""; position: absolute; left: -8px; top: .6rem; width: 11px; height: 11px; border-radius: 50%; background: var(--line); }
.timeline li.sent::before { background: var(--ok); } .timeline li.next::before { background: var(--info); } .timeline li.skipped::before { background: var(--bad); }
body.login main { max-width: 380px; padding-top: 10vh; }
.login-form label { display: block; margin-top: .7rem; }
.login-form input { width: 100%; }
.login-form button { margin-top: 1rem; width: 100%; }
@media (max-width: 700px) {
  main { padding: .6rem; }
  .hide-narrow { display: none; }
  th, td { padding: .35rem .3rem; }
  .who { margin-left: 0; width: 100%; }
}
"""#
}
