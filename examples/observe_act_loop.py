"""A minimal observe → decide → act loop over a Rigway session.

Run it after `make up` (a simulated rig showing a sign-in form), from the checkout: the
client reads `.rigway/local.json` (or RIGWAY_API_KEY and RIGWAY_BASE_URL), and without a
RIG_ID drives the account's one rig that is online with API access enabled:

    .venv/bin/python examples/observe_act_loop.py [RIG_ID] [--username ada]

`decide` is where a real agent asks its model: it would get `observation.jpeg` and the
text lines in `observation.text`, and answer with an action. Here it is a few rules that
fill in the sign-in form, so the loop runs without a model and stops by itself.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from rigway.client import ObserveResult, Rigway, SessionHandle, Target

MAX_STEPS = 10


@dataclass(frozen=True)
class Action:
    """Click `target`, then type `text` if given; `is_last` ends the loop after it."""

    why: str
    target: Target
    text: str | None = None
    is_last: bool = False


def decide(observation: ObserveResult, username: str) -> Action | None:
    """The next action towards a signed-in form, or None when there is nothing to do."""
    user = observation.find_target("Username")
    if user is not None and user.value == "":
        return Action("fill in the username", user, text=username)
    remember = observation.find_target("Remember me", role="check box")
    if remember is not None and remember.value != "checked":
        return Action("tick Remember me", remember)
    sign_in = observation.find_target("Sign in", role="push button")
    if sign_in is not None:
        return Action("press Sign in", sign_in, is_last=True)
    return None


def run(session: SessionHandle, username: str) -> list[str]:
    """Observe and act until `decide` is done; the reasons of the actions taken."""
    done: list[str] = []
    for _ in range(MAX_STEPS):
        # image=False: these rules read only the targets; a model would want the JPEG.
        action = decide(session.observe(image=False), username)
        if action is None:
            break
        session.click(target=action.target)
        if action.text is not None:
            session.type_text(action.text)
        done.append(action.why)
        if action.is_last:
            break
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "rig_id", nargs="?", default=None, help="the rig to drive (default: the one usable rig)"
    )
    parser.add_argument("--username", default="ada")
    args = parser.parse_args()
    with Rigway() as rigway, rigway.sessions.create(rig_id=args.rig_id) as session:
        for step, why in enumerate(run(session, args.username), start=1):
            print(f"step {step}: {why}")
    print(f"session {session.session_id} ended, billed {session.info.billed_minutes} min")


if __name__ == "__main__":
    main()
