"""One scripted task on a real GTK app, run three ways.

gtk3-widget-factory on a private Xvfb desktop (1920x1080, openbox; tests/support/
x_desktop.py), `rigway up --desktop x11` in a subprocess, this process the client. The
task (17 steps: switch pages, focus a field, type, tab, type, pick a list item, toggle
buttons, open a dialog and confirm it, tick a check box in a menu, fill and close a
settings dialog) runs on a fresh copy of the app for each method (bench/step_methods.py):

- rigway: each step is one input batch with `settle` (quiet_ms 100) and `observe`;
- rigway, quiet 50: the same with quiet_ms 50, the shortest quiet period tried (the
  contract allows 20);
- sleep 2.0 s: the same API, the batch, a fixed 2.0 s sleep, then `GET /observe` (the
  Anthropic computer-use demo's method);
- e2b: `xdotool` in a subprocess, a fixed 1.0 s sleep (E2B's desktop example sleeps one
  second after a click before its screenshot), `scrot` to a PNG file, read back;
- no wait, a control: the batch with `observe` and no settle, which shows that the
  check below does catch a screen still changing;
- rigway once more on a copy of the app with GTK's animations off: a fixed sleep costs
  the same whatever the app draws, a settle what the app draws;
- rigway, reduce motion: a second desktop and stack whose agent runs with
  `--reduce-motion` (`rigway up --reduce-motion`), the stock app (no settings of its
  own about animations): while the session is live the agent is the desktop's
  XSETTINGS manager and publishes animations off; and the sleep 2.0 s method on that
  same stack, for the ratio between the two there.

The clicks land on the same points for every method: an untimed first pass finds each
control in the accessibility tree (`/targets`) and records the events, which every
method then replays. After each step's observation, untimed: 500 ms later the same
method's capture grabs the screen again; if the two differ (decoded pixels, threshold
in bench/step_methods.py) the step observed a screen that was still changing.

Then step latency: a zenity check list's check box, whose redraw is done in well
under 50 ms (measured here too, by polling the screen after a click sent through
XTEST), clicked with `settle` and nothing else.

Two timers of GTK's are switched off for the app, as a desktop set up for an agent
would: the text caret's blink and the overlay scroll bars' fade-out (GTK hides them
a second after the pointer stops). Both change the screen on their own clock, long
after any step; every method observing sooner than they fire would count them.

Run: .venv/bin/python -m bench.agent_step
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import mss
from tests.support.x_desktop import XDesktop, wait_until
from Xlib import X
from Xlib.ext import xtest

from bench.lean_http import LeanClient
from bench.local_stack import rigway_up
from bench.stats import p50, row
from bench.step_methods import (
    DEMO_SLEEP_S,
    E2B_SLEEP_S,
    QUIET_MS,
    SCREEN,
    SETTLE,
    SHORT_QUIET_MS,
    SHORT_SETTLE,
    DemoSleepMethod,
    E2bMethod,
    Event,
    Method,
    ObserveAfterMethod,
    Plan,
    StepResult,
    ms_since,
    run_task,
)
from bench.x11_gateway import Session

FACTORY = "gtk3-widget-factory"
APP_START_TIMEOUT_S = 30.0
CALIBRATION_PAUSE_S = 1.0
LATENCY_ROUNDS = 40
FOCUS_ROUNDS = 20  # a diagnostic, not a bar: fewer rounds of ~0.3 s each
REDRAW_ROUNDS = 12
REDRAW_WINDOW_S = 0.3
SETTLE_BAR_MS = QUIET_MS + 30
SPEEDUP_BAR = 10.0
RIGWAY = "rigway"
RIGWAY_SHORT = f"rigway, quiet {SHORT_QUIET_MS}"
STILL = "rigway, still GTK"
NO_WAIT = "no wait"
REDUCED = "rigway, reduce motion"
SLEEP_REDUCED = f"sleep {DEMO_SLEEP_S:.1f} s, reduce motion"
# Each rigway row against the sleep method run on the same stack.
SLEEP_OF = {
    RIGWAY: DemoSleepMethod.name,
    RIGWAY_SHORT: DemoSleepMethod.name,
    STILL: DemoSleepMethod.name,
    REDUCED: SLEEP_REDUCED,
}

Targets = list[dict[str, Any]]


# -- the task ------------------------------------------------------------------------


class Step(NamedTuple):
    label: str
    events: Callable[[Targets], list[Event]]


def _find(targets: Targets, role: str, name: str | None, index: int) -> dict[str, Any]:
    found = [t for t in targets if t["role"] == role and (name is None or t["name"] == name)]
    if len(found) <= index:
        raise LookupError(f"no {role} {name!r} #{index} among {len(targets)} targets")
    return found[index]


def _click(
    role: str, name: str | None = None, index: int = 0, *, dialog: bool = False
) -> Callable[[Targets], list[Event]]:
    """A click at the centre of a control; `dialog`: one of a dialog, which must then be
    the focused window (the main window has controls of the same name and role)."""

    def events(targets: Targets) -> list[Event]:
        if dialog and any(t["name"] == "Page 3" for t in targets):
            raise LookupError(f"a dialog's {role} {name!r}: the main window has the focus")
        target = _find(targets, role, name, index)
        x, y = target["x"] + target["w"] // 2, target["y"] + target["h"] // 2
        return [{"type": "mouse_click", "x": x, "y": y}]

    return events


def _keys(*events: Event) -> Callable[[Targets], list[Event]]:
    return lambda _targets: list(events)


# Unnamed controls go by their order in the walk (the walk is deterministic for a fresh
# app): the first two texts of page 3 are its First Name and Last Name entries. The
# dialog confirmed is Inform's, not Act's: confirming Act's starts a timer of the app's
# that marks Page 3 (needs-attention) a second later, a change no quiet period shorter
# than that second can wait for, and not the step's own.
TASK = (
    Step("switch to Page 3", _click("radio button", "Page 3")),
    Step("focus the First Name field", _click("text")),
    Step("type a first name", _keys({"type": "type_text", "text": "Ada"})),
    Step("tab to Last Name", _keys({"type": "key_press", "key": "Tab"})),
    Step("type a last name", _keys({"type": "type_text", "text": "Lovelace"})),
    Step("pick a list item", _click("list item", index=1)),
    Step("toggle Record", _click("toggle button", "Record")),
    Step("switch to Page 2", _click("radio button", "Page 2")),
    Step("press Inform: a dialog opens", _click("push button", "Inform")),
    Step("confirm the dialog: Do It", _click("push button", "Do It", dialog=True)),
    Step("open the menu", _click("toggle button", "Menu")),
    Step("tick Dark Theme: all restyled", _click("check box", "Dark Theme")),
    Step("close the menu (Escape)", _keys({"type": "key_press", "key": "Escape"})),
    Step("press Configure: a dialog opens", _click("push button", "Configure")),
    Step("type in Details", _keys({"type": "type_text", "text": "fast"})),
    Step("flip the Mode switch", _click("toggle button", "", dialog=True)),
    Step("close the dialog", _click("push button", "Close", dialog=True)),
)


# -- the desktop and the API ------------------------------------------------------------


class Stack(NamedTuple):
    desk: XDesktop
    session: Session
    base_url: str
    headers: dict[str, str]
    still_factory: tuple[str, ...]  # the factory with GTK's animations off


def _gtk_config(root: Path, animations: bool) -> Path:
    """An XDG_CONFIG_HOME whose GTK settings.ini turns the caret's blink off (and the
    animations, when asked); without an XSETTINGS daemon GTK reads this file."""
    settings = root / "gtk-3.0" / "settings.ini"
    settings.parent.mkdir(parents=True)
    lines = ["[Settings]", "gtk-cursor-blink=false"]
    lines += [] if animations else ["gtk-enable-animations=false"]
    settings.write_text("\n".join(lines) + "\n")
    return root


@contextmanager
def _stack(*, reduce_motion: bool = False) -> Iterator[Stack]:
    with tempfile.TemporaryDirectory(prefix="rigway-agent-step-") as scratch:
        config = _gtk_config(Path(scratch) / "animated", animations=True)
        still = _gtk_config(Path(scratch) / "still", animations=False)
        still_factory = ("env", f"XDG_CONFIG_HOME={still}", FACTORY)
        with XDesktop(*SCREEN) as desk:
            env = {**desk.env, "XDG_CONFIG_HOME": str(config), "GTK_OVERLAY_SCROLLING": "0"}
            options = ("--reduce-motion",) if reduce_motion else ()
            with rigway_up("x11", env=env, options=options) as local:
                headers = {"Authorization": f"Bearer {local['api_key']}"}
                client = LeanClient(local["base_url"], headers)
                session = Session(client, local["rig_ids"][0])
                try:
                    yield Stack(desk, session, local["base_url"], headers, still_factory)
                finally:
                    _reconnect(session, local["base_url"], headers)
                    session.end()
                    session.client.close()


def _reconnect(session: Session, base_url: str, headers: dict[str, str]) -> None:
    """A fresh keep-alive connection: the gateway closes one idle for 5 s, and the e2b
    method leaves the API idle for a whole run."""
    session.client.close()
    session.client = LeanClient(base_url, headers)


def _fresh_app(stack: Stack, argv: Sequence[str], ready: Callable[[Targets], bool]) -> None:
    """Kill what the session launched, park the pointer, start `argv` and wait for its
    window's controls."""
    _reconnect(stack.session, stack.base_url, stack.headers)
    stack.session.post("/app/kill", {})
    subprocess.run(["xdotool", "mousemove", "0", "0"], env=stack.desk.env, check=True)
    stack.session.launch(*argv)
    wait_until(
        lambda: ready(stack.session.targets()), timeout_s=APP_START_TIMEOUT_S, message=argv[0]
    )


def _factory_ready(targets: Targets) -> bool:
    return any(t["name"] == "Page 3" for t in targets)


def _settle_supported(session: Session) -> bool:
    """Whether this gateway settles and observes after a batch (API 1.1)."""
    body = {"events": [{"type": "mouse_move", "x": 0, "y": 0}], "settle": SETTLE}
    try:
        answer = session.post("/input", body).json()
    except RuntimeError:  # a gateway before 1.1 refuses the unknown field
        return False
    return "settle" in answer


def _calibrate(stack: Stack, settle: bool) -> Plan:
    """Find each step's control in the accessibility tree of a fresh app and record
    the events; doubles as the warm-up of every path."""
    _fresh_app(stack, [FACTORY], _factory_ready)
    plan: Plan = []
    for step in TASK:
        events = step.events(stack.session.targets())
        body: dict[str, Any] = {"events": events}
        if settle:
            body["settle"] = {"quiet_ms": 300, "timeout_ms": 3000}
        stack.session.post("/input", body)
        if not settle:
            time.sleep(CALIBRATION_PAUSE_S)
        plan.append((step.label, events))
    return plan


# -- step latency ----------------------------------------------------------------------

CHECKLIST = (
    "zenity", "--list", "--checklist", "--title=Pick", "--column=Pick", "--column=Fruit",
    "TRUE", "Apples", "FALSE", "Pears", "FALSE", "Plums",
)  # fmt: skip


class Probe(NamedTuple):
    title: str
    redraw: list[float]  # when the pixels stop changing after an in-process XTEST click
    rtt: list[float]  # input click + settle round trips (none without settle)
    waited: list[float]  # the host's settle waited_ms
    unsettled: int


def _centre(target: dict[str, Any]) -> tuple[int, int]:
    return target["x"] + target["w"] // 2, target["y"] + target["h"] // 2


def _xtest_click(conn: Any, x: int, y: int) -> None:
    """A left click at x,y sent in-process through XTEST; back once the server has it."""
    xtest.fake_input(conn, X.MotionNotify, x=x, y=y)
    xtest.fake_input(conn, X.ButtonPress, 1)
    xtest.fake_input(conn, X.ButtonRelease, 1)
    conn.sync()


def _redraw_ms(desk: XDesktop, points: Sequence[tuple[int, int]]) -> list[float]:
    """How long after a click (on each point in turn) the screen's pixels stop changing,
    by grabbing it as fast as mss can (a few ms a grab) for REDRAW_WINDOW_S. The click
    goes through XTEST in this process: an `xdotool` subprocess took about 100 ms to
    start, and a clock started when it returned missed the first 100 ms of a redraw."""
    samples = []
    with mss.MSS(display=desk.display) as sct, desk.x_connection() as conn:
        monitor = sct.monitors[0]
        for round_number in range(REDRAW_ROUNDS):
            x, y = points[round_number % len(points)]
            before = bytes(sct.grab(monitor).raw)
            clicked = time.perf_counter()
            _xtest_click(conn, x, y)
            last = 0.0
            while time.perf_counter() - clicked < REDRAW_WINDOW_S:
                now = bytes(sct.grab(monitor).raw)
                if now != before:
                    before, last = now, ms_since(clicked)
            samples.append(last)
    return samples


def _probe(stack: Stack, title: str, points: Sequence[tuple[int, int]], rounds: int) -> Probe:
    """Clicks on `points` in turn: first through XTEST, watched by mss, then `rounds`
    times through the API with a settle (none when `rounds` is 0)."""
    redraw = _redraw_ms(stack.desk, points)
    _reconnect(stack.session, stack.base_url, stack.headers)
    rtt: list[float] = []
    waited: list[float] = []
    unsettled = 0
    for round_number in range(rounds):
        x, y = points[round_number % len(points)]
        body = {"events": [{"type": "mouse_click", "x": x, "y": y}], "settle": SETTLE}
        started = time.perf_counter()
        answer = stack.session.post("/input", body).json()
        rtt.append(ms_since(started))
        waited.append(float(answer["settle"]["waited_ms"]))
        unsettled += not answer["settle"]["settled"]
    return Probe(title, redraw, rtt, waited, unsettled)


def _check_box_probe(stack: Stack, settle: bool) -> Probe:
    _fresh_app(stack, CHECKLIST, lambda targets: len(targets) >= 6)
    # The first row's check box: the unnamed cell of the Pick column.
    point = _centre(_find(stack.session.targets(), "table cell", "", 0))
    title = f"a zenity check list's check box, clicked {LATENCY_ROUNDS} times"
    return _probe(stack, title, [point], LATENCY_ROUNDS if settle else 0)


def _focus_probe(stack: Stack, settle: bool) -> Probe:
    """Focus moved between the factory's First and Last Name entries: Adwaita's
    transitions run for 200 ms, and GTK repaints every frame of them."""
    _fresh_app(stack, [FACTORY], _factory_ready)
    stack.session.post("/input", {"events": TASK[0].events(stack.session.targets())})

    def page_3_entries() -> Targets | None:
        targets = stack.session.targets()
        shown = any(t["name"] == "Page 3" and t["value"] == "checked" for t in targets)
        entries = [t for t in targets if t["role"] == "text"][:2]
        return entries if shown and len(entries) == 2 else None

    texts = wait_until(page_3_entries, message="page 3's entries")
    title = "focus moved by a click between the factory's two entries (animated)"
    points = [_centre(text) for text in texts]
    return _probe(stack, title, points, FOCUS_ROUNDS if settle else 0)


# -- printing ----------------------------------------------------------------------------


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


LEGEND = (
    f"{RIGWAY}: input batch with settle (quiet_ms {QUIET_MS}) and observe, one round trip",
    f"{RIGWAY_SHORT}: the same with quiet_ms {SHORT_QUIET_MS}",
    f"{STILL}: the same, the app run with GTK's animations off",
    f"{NO_WAIT}: a control, input batch with observe and no settle (seen at once)",
    f"sleep {DEMO_SLEEP_S:.1f} s: input batch, a {DEMO_SLEEP_S:.1f} s sleep, GET /observe",
    f"e2b {E2B_SLEEP_S:.1f} s: xdotool, a {E2B_SLEEP_S:.1f} s sleep, scrot to a PNG read back",
    f"{REDUCED}: rigway on a stack whose agent runs with --reduce-motion, the stock app",
    f"{SLEEP_REDUCED}: the sleep method on that same stack",
    "* the screen 500 ms later differed: the step observed a screen still changing",
)


def _print_steps(runs: dict[str, list[StepResult]]) -> None:
    names = list(runs)
    print(f"{'step':<36}" + "".join(f"{name:>20}" for name in names))
    for index, (label, *_rest) in enumerate(next(iter(runs.values()))):
        cells = []
        for name in names:
            result = runs[name][index]
            mark = " *" if result.difference.changing else "  "
            cells.append(f"{result.wall_ms:>15.1f} ms{mark}")
        print(f"{index + 1:>2}. {label:<32}" + "".join(f"{cell:>20}" for cell in cells))
    totals = "".join(f"{sum(r.wall_ms for r in runs[n]) / 1000:>18.2f} s" for n in names)
    print(f"{'total (wall, per-step sum)':<36}{totals}")
    for line in LEGEND:
        print(line)


def _print_method(name: str, results: list[StepResult]) -> None:
    changing = [(i + 1, r) for i, r in enumerate(results) if r.difference.changing]
    print(row(f"{name}: step wall time", [r.wall_ms for r in results]))
    print(f"  steps observing a changing screen: {len(changing)}/{len(results)}")
    for number, result in changing:
        print(
            f"    step {number} ({result.label}): {result.difference.pixels} pixels "
            f"differ, in x,y,w,h {result.difference.box}"
        )
    settled = [(r.wall_ms, r.settle) for r in results if r.settle is not None]
    if not settled:
        return
    waited = [float(settle["waited_ms"]) for _wall, settle in settled]
    rest = [wall - float(settle["waited_ms"]) for wall, settle in settled]
    print(row("  host settle waited_ms", waited))
    print(row("  the rest: input, observe, HTTP", rest))
    print(f"  waited_ms by step: {' '.join(f'{ms:.0f}' for ms in waited)}")
    unsettled = sum(not settle["settled"] for _wall, settle in settled)
    print(f"  settles that hit their timeout: {unsettled}/{len(settled)}")


def _print_summary(runs: dict[str, list[StepResult]]) -> None:
    totals = {name: sum(r.wall_ms for r in results) for name, results in runs.items()}
    rigways = [name for name in SLEEP_OF if name in totals]
    if not rigways:
        print("rigway did not run: this gateway has no settle (API < 1.1)")
    for rigway in rigways:
        print(f"{rigway}, total {totals[rigway] / 1000:.2f} s:")
        sleep = SLEEP_OF[rigway]
        for name in dict.fromkeys((sleep, DemoSleepMethod.name, E2bMethod.name)):
            print(f"  total {name} / total {rigway}: {totals[name] / totals[rigway]:5.1f}x")
        speedup = totals[sleep] / totals[rigway]
        changing = sum(r.difference.changing for r in runs[rigway])
        print(f"  bar >= {SPEEDUP_BAR:.0f}x {sleep}: {_met(speedup >= SPEEDUP_BAR)}")
        print(f"  bar 0 steps observing a changing screen: {_met(changing == 0)}")


def _print_probe(probe: Probe, bar: bool) -> None:
    print(probe.title)
    print(row("  pixels stop changing (XTEST click, mss)", probe.redraw))
    if not probe.rtt:
        print("  settle: not measured, this gateway has no settle (API < 1.1)")
        return
    print(row(f"  input click + settle quiet_ms={QUIET_MS} (RTT)", probe.rtt))
    print(row("  host settle waited_ms", probe.waited))
    print(row("  damage stops: waited_ms - quiet_ms", [ms - QUIET_MS for ms in probe.waited]))
    print(f"  settles that hit their timeout: {probe.unsettled}/{len(probe.rtt)}")
    if bar:
        rtt = p50(probe.rtt)
        verdict = _met(rtt <= SETTLE_BAR_MS)
        print(f"  bar: RTT p50 {rtt:.1f} ms <= quiet_ms + 30 = {SETTLE_BAR_MS} ms: {verdict}")


# -- main --------------------------------------------------------------------------------


def _methods(stack: Stack, scratch: Path, settle: bool) -> list[Method]:
    session = stack.session
    rigway: list[Method] = (
        [
            ObserveAfterMethod(session, RIGWAY, SETTLE),
            ObserveAfterMethod(session, RIGWAY_SHORT, SHORT_SETTLE),
        ]
        if settle
        else []
    )
    sleepers: list[Method] = [DemoSleepMethod(session), E2bMethod(stack.desk.env, scratch)]
    control: list[Method] = [ObserveAfterMethod(session, NO_WAIT, None)] if settle else []
    return [*rigway, *sleepers, *control]


def _run_all(stack: Stack, settle: bool) -> tuple[Plan, dict[str, list[StepResult]]]:
    plan = _calibrate(stack, settle)
    runs: dict[str, list[StepResult]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for method in _methods(stack, Path(scratch), settle):
            _fresh_app(stack, [FACTORY], _factory_ready)
            runs[method.name] = run_task(method, plan)
    if settle:
        # The sleep methods' time is their sleep whatever the app draws; settle's is
        # what the app draws, so it runs once more on an app that does not animate.
        _fresh_app(stack, stack.still_factory, _factory_ready)
        runs[STILL] = run_task(ObserveAfterMethod(stack.session, STILL, SETTLE), plan)
    return plan, runs


def _xsettings_manager(desk: XDesktop) -> str:
    """Who owns the XSETTINGS selection and what it says about animations, in words."""
    with desk.x_connection() as conn:
        owner = conn.get_selection_owner(conn.intern_atom("_XSETTINGS_S0"))
        if int(getattr(owner, "id", owner)) == X.NONE:
            return "no XSETTINGS manager"
        atom = conn.intern_atom("_XSETTINGS_SETTINGS")
        settings = owner.get_full_property(atom, atom)
        raw = b"" if settings is None else bytes(settings.value)
        said = "Gtk/EnableAnimations=0" if b"Gtk/EnableAnimations" in raw else "other settings"
        if raw.endswith((0).to_bytes(4, "little")) and said.endswith("=0"):
            return f"XSETTINGS manager 0x{owner.id:x}: {said}"
        return f"XSETTINGS manager 0x{owner.id:x}: {said} (value not 0)"


def _run_reduced(plan: Plan) -> tuple[dict[str, list[StepResult]], str, bool]:
    """rigway and the sleep method on a stack whose agent reduces motion, the stock app;
    also who managed the settings during the runs, and whether its first pass recorded
    the same events as the stock stack's (the same controls at the same points)."""
    with _stack(reduce_motion=True) as stack:
        same_plan = _calibrate(stack, settle=True) == plan  # also its warm-up
        runs: dict[str, list[StepResult]] = {}
        manager = _xsettings_manager(stack.desk)
        methods: list[Method] = [
            ObserveAfterMethod(stack.session, REDUCED, SETTLE),
            DemoSleepMethod(stack.session, SLEEP_REDUCED),
        ]
        for method in methods:
            _fresh_app(stack, [FACTORY], _factory_ready)
            runs[method.name] = run_task(method, plan)
    return runs, manager, same_plan


def main() -> None:
    load_before = os.getloadavg()
    started = time.perf_counter()
    with _stack() as stack:
        settle = _settle_supported(stack.session)
        plan, runs = _run_all(stack, settle)
        probes = (_check_box_probe(stack, settle), _focus_probe(stack, settle))
        stock_manager = _xsettings_manager(stack.desk)
    reduced_manager, same_plan = "not run (no settle)", True
    if settle:
        reduced, reduced_manager, same_plan = _run_reduced(plan)
        runs.update(reduced)
    load_after = os.getloadavg()
    print(f"{FACTORY} on Xvfb {SCREEN[0]}x{SCREEN[1]} (openbox), `rigway up --desktop x11`,")
    print(f"client in its own process; {os.cpu_count()} CPUs; load average before")
    whole_s = ms_since(started) / 1000
    print(f"{load_before[0]:.2f}, after {load_after[0]:.2f}; whole run {whole_s:.0f} s")
    print()
    for number, (label, events) in enumerate(plan, start=1):
        print(f"  step {number:>2}: {label}: {events}")
    print(f"stock stack: {stock_manager}; reduce-motion stack: {reduced_manager}")
    if not same_plan:
        print("  the reduce-motion stack's first pass found other points (its runs replay these)")
    print()
    _print_steps(runs)
    print()
    for name, results in runs.items():
        _print_method(name, results)
    _print_summary(runs)
    print()
    print("step latency")
    _print_probe(probes[0], bar=True)
    _print_probe(probes[1], bar=False)


if __name__ == "__main__":
    main()
