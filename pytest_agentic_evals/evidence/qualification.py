"""Live qualification: what evidence a case really gives, whatever class it declares.

A case claiming to be a live run is qualified structurally (real entrypoint, no stub inputs,
an oracle independent of the command's own prose) and downgraded with recorded reasons when it
is not one. ``can_fail`` tells whether a case's expectations could reject a wrong output;
``oracle`` whether they check something the command does not merely announce.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_agentic_evals.evidence.readback import (
    Printed,
    fixture_filled,
    printed_by_the_command,
)
from pytest_agentic_evals.loading.contract import own_code_reached, stub_inputs
from pytest_agentic_evals.model import (
    LIVE_CLASSES,
    Case,
    artifact_assertions,
    requires_absence,
)
from pytest_agentic_evals.probes import store as probe_store
from pytest_agentic_evals.shell import CommandParseError, simple_commands

# Files a browser/provider ``$ask`` handler writes when it really ran against the provider; a
# compile or pre-flight step writes none of them, so reading one back is what tells them apart.
PROVIDER_RUN_ARTIFACTS = frozenset({
    "node-receipt.json",
    "response.md",
    "response.meta.json",
    "browser-tab-lifecycle.json",
    "execution-status.json",
    "roundtable-summary.md",
    "compete-scorecard.json",
})

# Expectation keys that can reject a wrong output.  ``exit_code`` is judged apart (only a
# non-zero one can catch a leak); ``must_exercise`` is checked at load and
# ``blocked_when_stdout_contains`` can only make a trial BLOCKED, never PASS, so neither counts.
_CAPABLE_KEYS = (
    "artifacts",
    "stdout_contains",
    "stderr_contains",
    "stdout_excludes",
    "stderr_excludes",
    "stdout_matches",
    "stderr_matches",
    "stdout_equals",
    "stderr_equals",
    "trajectory",
    "allowed_domains",
    "disallowed_domains",
)

# Words of a generic crash report.  Their absence from the output is only the command saying
# it did not crash, which is its own report of success, not an independent observation.
_CRASH_WORDS = frozenset({
    "traceback", "error", "errors", "exception", "exceptions", "panic", "panicked", "fail",
    "failed", "failure", "failures", "fatal", "abort", "aborted", "crash", "crashed",
    "segfault", "segmentation", "fault", "stacktrace", "unhandled", "uncaught", "core",
    "dumped",
})
# Words that only accompany crash markers ("Traceback (most recent call last)",
# "thread 'main' panicked at"); alone they carry no information either.
_CRASH_FILLER = frozenset({
    "most", "recent", "call", "last", "at", "in", "the", "of", "a", "an", "thread", "main",
    "stack", "trace", "runtime", "internal", "unexpected", "occurred", "with",
})
# Exception class names (TypeError, NullPointerException), matched in CamelCase only so that
# an ordinary word that happens to end in "error" ("terror") is not taken for one.
_CRASH_SUFFIXES = ("Error", "Exception")


@dataclass(frozen=True)
class Qualification:
    """What evidence a case really gives, after its declared class was judged."""

    declared: str | None
    """The case's ``evidence_class`` as written."""
    effective: str
    """The class it counts as ("deterministic" when undeclared)."""
    live_qualified: bool | None
    """None when the declared class is not live; else whether it was accepted as live."""
    disqualifiers: tuple[str, ...]
    """Why the declared class was not accepted as is, one sentence each."""
    oracle_source: str | None = None
    """For a live class: who judged whether its oracle can fail, a fresh ``probe`` result or
    the ``static`` judgement."""

    def as_report(self) -> dict[str, Any]:
        """The case-level report fields (``declared_evidence_class`` and the rest)."""
        return {
            "declared_evidence_class": self.declared,
            "effective_evidence_class": self.effective,
            "live_qualified": self.live_qualified,
            "evidence_disqualifiers": list(self.disqualifiers),
            "evidence_oracle_source": self.oracle_source,
        }


def is_generic_crash_marker(text: str) -> bool:
    """Whether an excluded substring only says "the command did not crash".

    ``Traceback``, ``Error``, ``panic``, ``FAIL``, ``TypeError``, ``Traceback (most recent
    call last)``: a phrase made only of crash words (and the filler that accompanies them) is
    generic.  Anything naming a value or a specific message (``555-0100``, ``error: name
    required``) is something the command could plausibly print, so excluding it is a check.
    """
    words = re.findall(r"[^\W\d_]+|\d+", text)
    if not words:
        return False
    marker = False
    for word in words:
        lower = word.lower()
        if lower in _CRASH_WORDS or word.endswith(_CRASH_SUFFIXES):
            marker = True
        elif lower not in _CRASH_FILLER:
            return False
    return marker


# Artifact assertion keys that only say where and how to read, or which claim it serves.
_ARTIFACT_FRAMING = frozenset({"path", "json_pointer", "optional", "outside_workspace", "claim"})
_ARTIFACT_EXCLUDES = ("excludes", "lines_exclude")


def artifact_is_oracle(assertion: Any) -> bool:
    """Whether an artifact assertion checks something the command does not merely announce.

    A binding assertion reads the file back, which is independent of the command's prose;
    the exception is one whose only checks exclude generic crash markers (``Traceback`` in
    ``excludes``): that absence is the command's own report of success. An ``excludes`` of
    something the command could write (a phone number, a secret) is a real check.
    """
    if not isinstance(assertion, dict) or assertion.get("optional"):
        return False
    checks = set(assertion) - _ARTIFACT_FRAMING
    if not checks or not checks <= set(_ARTIFACT_EXCLUDES):
        return True
    excluded = [text for key in _ARTIFACT_EXCLUDES for text in assertion.get(key) or ()
                if isinstance(text, str)]
    return any(not is_generic_crash_marker(text) for text in excluded)


def _command_words(case: Case) -> list[str]:
    """Every word the command passes to a program, also inside ``sh -c`` scripts."""
    try:
        words = [word for command in simple_commands(case.command) for word in command.argv]
    except CommandParseError:
        words = list(case.command)
    # A handler invocation is often one quoted argument ("$ask roundtable --execute").
    return words + [part for word in words for part in word.split() if part != word]


def _ask_disqualifier(case: Case) -> tuple[str | None, bool]:
    """(reason, execute_given) for a browser ``$ask`` handler case; reason None when fine."""
    words = _command_words(case)
    if not any(word.startswith("$ask") for word in words):
        return None, True
    execute = any(
        word == "--execute"
        or (word.startswith("--execute=")
            and word.partition("=")[2].lower() not in ("0", "false", "no", "off", ""))
        for word in words
    )
    readback = [
        str(assertion.get("path")) for assertion in artifact_assertions(case)
        if PurePosixPath(str(assertion.get("path", ""))).name in PROVIDER_RUN_ARTIFACTS
        and not assertion.get("optional") and not requires_absence(assertion)
    ]
    missing = []
    if not execute:
        missing.append("--execute")
    if not readback:
        missing.append("an artifact assertion on a provider run artifact ("
                       + ", ".join(sorted(PROVIDER_RUN_ARTIFACTS)) + ")")
    if not missing:
        return None, True
    reason = (f"browser $ask handler without {' and '.join(missing)}: a compile or pre-flight "
              "of a $ask handler is deterministic mechanism proof, never a live run")
    return reason, execute


def _oracle_disqualifiers(case: Case) -> list[str]:
    """Why the case has no oracle independent of the command's own report (empty: it has)."""
    assertions = artifact_assertions(case)
    not_the_skills = fixture_filled(case)
    binding = [a for a in assertions if artifact_is_oracle(a) and not requires_absence(a)
               and posixpath.normpath(str(a.get("path"))) not in not_the_skills]
    excluded = [
        text
        for stream in ("stdout_excludes", "stderr_excludes")
        for text in (case.expected.get(stream) or ())
        if isinstance(text, str)
    ]
    printed = printed_by_the_command(case) if excluded else Printed()
    specific = [text for stream in ("stdout", "stderr")
                for text in _carried_exclusions(case, stream, printed)]
    reasons = []
    if case.readback and not binding:
        reasons.append("readback: true with nothing behind it: no expected artifact is read "
                       "back, so the flag is only a declaration")
    if binding or specific:
        return reasons
    detail = []
    if assertions:
        detail.append("its artifact assertions are optional (skipped when the file is "
                      "missing), only exclude generic crash markers, only require a file to "
                      "be absent (as it is when the skill does nothing), or read back a file "
                      "its own input artifacts or its own command wrote (an echo redirected "
                      "into it, a copy of a file of the skill's folder)")
    generic = [text for text in excluded if is_generic_crash_marker(text)]
    if generic:
        detail.append("its excludes (" + ", ".join(repr(t) for t in generic) + ") are generic "
                      "crash markers whose absence is the command's own report of success")
    given = _given_exclusions(case, excluded)
    never_given = [text for text in excluded if text not in generic and text not in given]
    if never_given:
        detail.append("its excludes (" + ", ".join(repr(t) for t in never_given) + ") are "
                      "texts the trial never gives the command (in its command, environment, "
                      "input artifacts or the files its command names), absent whatever the "
                      "skill does")
    if given:
        detail.append("its excludes (" + ", ".join(repr(t) for t in given) + ") are on a "
                      "stream where no check asks for what the trial gave (a "
                      "stdout_contains or stderr_contains of another text it gives the "
                      "command, which the command's own programs do not print), so a skill "
                      "that does nothing passes them")
    if any(case.expected.get(k) for k in ("stdout_contains", "stderr_contains",
                                          "stdout_matches", "stderr_matches")) or any(
            k in case.expected for k in ("stdout_equals", "stderr_equals")):
        detail.append("its stdout/stderr checks read the command's own prose")
    reasons.append("no independent read-back oracle (expected.artifacts, readback backed by an "
                   "artifact, or stdout/stderr_excludes of something the trial gives the "
                   "command)" + (": " + "; ".join(detail) if detail else "")
                   + "; an exit code plus the command's own success prose is not proof")
    return reasons


def qualify(case: Case, probe: probe_store.Stored = probe_store.NOTHING) -> Qualification:
    """Judge a case's declared evidence class; live classes must earn their name.

    A case declaring ``live_e2e`` or ``adversarial_live_e2e`` is downgraded, never silently
    accepted, when it feeds itself stub inputs or says it is ``mocked`` or ``uses_stub``,
    reaches no substantive production entrypoint,
    has no independent read-back oracle, or is a browser ``$ask`` handler without
    ``--execute`` and a read-back of the provider's run artifacts.  It then counts as
    ``fault_injected_deterministic`` when it still reaches a real entrypoint (a real path with
    a faked boundary) and as ``deterministic`` otherwise; a ``$ask`` case without
    ``--execute`` is a compile/pre-flight and always counts as ``deterministic``.  An
    ``adversarial_live_e2e`` case that is not adversarial or negative counts as ``live_e2e``.
    Every reason is recorded.  Non-live classes are taken as declared.

    Whether the oracle can fail is judged by ``probe``, the case's stored probe result, when
    it is fresh and conclusive (it killed or was survived by a skill that does nothing and one
    that crashes), in both directions; else by the static judgement.
    """
    declared = case.evidence_class
    if declared not in LIVE_CLASSES:
        return Qualification(declared, declared or "deterministic", None, ())

    reasons: list[str] = []
    entrypoint: str | None = None
    try:
        stubs = stub_inputs(case)
    except CommandParseError as exc:
        stubs = []
        reasons.append(f"its command cannot be analysed, so it reaches no entrypoint anyone "
                       f"can vouch for: {exc}")
    else:
        entrypoint, explanation = own_code_reached(case)
        if stubs:
            reasons.append(f"it feeds itself fixture/stub/mocked inputs ({', '.join(stubs)}) "
                           "as the boundary authority; write real inputs with the case's "
                           "\"artifacts\" instead")
        if entrypoint is None:
            reasons.append(f"it reaches no substantive production entrypoint: {explanation}")
    declared_fakes = [key for key in ("mocked", "uses_stub") if case.source.get(key) is True]
    if declared_fakes:
        reasons.append(f"it declares {' and '.join(f'{key}: true' for key in declared_fakes)}: "
                       "a faked boundary is never live evidence")
    empirical = probe.capable(probe_store.CAPABLE_KILLS)
    source = probe_store.SOURCE_STATIC if empirical is None else probe_store.SOURCE_PROBE
    if empirical is None:
        reasons += _oracle_disqualifiers(case)
    elif not empirical:
        reasons += [f"the probe shows its oracle survived `{mutant}` (a broken skill passes "
                    "it)" for mutant in probe.survived(probe_store.CAPABLE_KILLS)]
    ask_reason, execute = _ask_disqualifier(case)
    if ask_reason is not None:
        reasons.append(ask_reason)

    if reasons:
        # A $ask compile/pre-flight never ran the handler: mechanism proof, whatever it calls.
        real_path = entrypoint is not None and execute
        effective = "fault_injected_deterministic" if real_path else "deterministic"
        return Qualification(declared, effective, False, tuple(reasons), source)
    if declared == "adversarial_live_e2e" and case.type == "positive":
        reason = ("declared adversarial_live_e2e but the case is positive: a run that expects "
                  "success is not adversarial, so it counts as live_e2e")
        return Qualification(declared, "live_e2e", True, (reason,), source)
    return Qualification(declared, declared, True, (), source)


def can_fail(case: Case) -> bool:
    """Whether the case's expectations could reject a wrong output.

    A bare ``exit_code: 0`` cannot: a pipeline that leaks the value still exits 0.  A
    non-zero exit code, any stdout/stderr check, an artifact assertion, a trajectory or a
    domain rule can.
    """
    expected = case.expected
    exit_code = expected.get("exit_code")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
        return True
    # An empty allowed_domains is a rule too: it refuses every host.
    return any(expected.get(key) for key in _CAPABLE_KEYS) or "allowed_domains" in expected


# A capable oracle, judged on substance (seam coverage counts only a case with one).

# Words a command prints to announce its own success.  A stdout/stderr_contains made only of
# these (and the filler around them) holds whenever the command runs to the end, so it is no
# check of what the command did.  Kept small on purpose: anything naming a value is a check.
SUCCESS_PROSE = frozenset({
    "ok", "okay", "success", "successful", "successfully", "succeeded", "done", "pass",
    "passed", "passing", "complete", "completed", "finished", "ready", "green", "true",
    "yes", "✓", "✔", "✅",
})
_PROSE_FILLER = frozenset({
    "all", "the", "is", "was", "it", "task", "tests", "test", "checks", "check", "run",
    "job", "status", "everything", "good", "fine", "and", "with", "no", "errors",
})


def is_success_prose(text: str) -> bool:
    """Whether ``text`` is only the command announcing success ("OK", "All tests passed ✓")."""
    words = re.findall(r"\w+|[✓✔✅]", text.lower())
    if not words:
        return not text.strip()  # "" is contained in every output
    return all(w in SUCCESS_PROSE or w in _PROSE_FILLER for w in words) and any(
        w in SUCCESS_PROSE for w in words)


def _echoed(text: str, case: Case) -> bool:
    """Whether the command's own argv carries ``text`` (``echo ready`` checked for "ready")."""
    needle = text.strip()
    return bool(needle) and any(needle in word for word in case.command)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


# What is read of a file a command names, to see whether it holds an excluded text.
_NAMED_FILE_BYTES = 8 * 1024 * 1024
_NAMED_FILES = 64


def trial_gives(text: str, case: Case) -> bool:
    """Whether the trial hands the command ``text``: in a word of its command (a ``sh -c``
    script included), a value of its environment, an input artifact, or a file a word of its
    command names.  A broken skill passes on what it is given (echoes an argument, copies its
    input, lets a secret through), so excluding such a text from the output is a check; a text
    the trial never gives the command (``qqqq``) is absent whatever the skill does.  The
    skill's own files do not count: a skill under evaluation writes them itself."""
    needle = text.strip()
    if not needle:
        return False
    words = _command_words(case)  # also the operands of programs a script starts
    if any(needle in word for word in (*case.judged_command, *words, *case.env.values())):
        return True
    for artifact in case.input_artifacts:
        if artifact.source is not None:
            if _file_holds(artifact.source, needle):
                return True
        elif artifact.binary is not None:
            if needle.encode() in artifact.binary:
                return True
        elif needle in artifact.text() or needle in str(artifact.content):
            return True
    named = [word.partition("=")[2] if word.startswith("-") else word for word in words]
    return any(_file_holds(case.cwd / name, needle)
               for name in dict.fromkeys(named[:_NAMED_FILES]) if name)


def _file_holds(path: Path, needle: str) -> bool:
    """Whether the regular file at ``path`` holds ``needle`` in its first bytes."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as stream:
            return needle.encode() in stream.read(_NAMED_FILE_BYTES)
    except (OSError, ValueError):
        return False


def _given_exclusions(case: Case, texts: list[str]) -> list[str]:
    """The excluded texts that check something: no generic crash marker, and given to the
    command by the trial."""
    return [text for text in texts
            if not is_generic_crash_marker(text) and trial_gives(text, case)]


def _carried_exclusions(case: Case, stream: str, printed: Printed) -> list[str]:
    """The given texts ``stream`` must not hold, when it must hold another text the trial
    gives the command (``stdout_contains`` the name, ``stdout_excludes`` the phone): a skill
    that passes its input on fails the one, a skill that does nothing the other.  Without
    that, the stream may carry nothing of the data, and its exclusions hold for a skill that
    does nothing.  A text the command's own programs print (``bash run.sh && echo Ada``) is
    there whatever the skill does, so it does not count; nor does any, when one of them runs
    code (``python3 -c "print(chr(65) + 'da')"``).  ``printed``: what the command's own
    programs print (:func:`printed_by_the_command`)."""
    excluded = _given_exclusions(case, _strings(case.expected.get(f"{stream}_excludes")))
    if not excluded:
        return []
    if printed.computes:  # a program of its own may print any text: none is carried
        return []
    wanted = [text for text in _strings(case.expected.get(f"{stream}_contains"))
              if text.strip() and not is_success_prose(text)
              and not any(text in gone or gone in text for gone in excluded)
              and trial_gives(text, case) and not _printed_itself(text, printed)]
    return excluded if wanted else []


def _printed_itself(text: str, printed: Printed) -> bool:
    """Whether ``text`` is in what the command's own programs are handed: their words (and
    the environment, for those that read it), or the files they name."""
    needle = text.strip()
    return bool(needle) and (
        any(needle in word for word in printed.words)
        or any(_file_holds(path, needle) for path in printed.files[:_NAMED_FILES]))


def unreached(case: Case) -> str | None:
    """Why the case's command reaches no code of the skill, or None when it does: such a case
    guards nothing of the skill, whatever its checks are (``stat`` of a missing path exits 1
    every time)."""
    try:
        entrypoint, explanation = own_code_reached(case)
    except CommandParseError as exc:
        return f"its command cannot be analysed: {exc}"
    return None if entrypoint is not None else explanation


def oracle(case: Case) -> tuple[bool, list[str]]:
    """(capable, why not): can this case fail on something the command does not announce?"""
    expected = case.expected
    if not can_fail(case):
        return False, ["its only check is exit_code 0, which a broken command also meets"]
    exit_code = expected.get("exit_code")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
        return True, []
    artifacts = expected.get("artifacts")
    if isinstance(artifacts, list) and any(artifact_is_oracle(a) for a in artifacts):
        return True, []
    if "allowed_domains" in expected:  # even empty: then it refuses every host
        return True, []
    for key in ("trajectory", "disallowed_domains", "stdout_matches", "stderr_matches"):
        if expected.get(key):
            return True, []
    for stream in ("stdout_excludes", "stderr_excludes"):
        if _given_exclusions(case, _strings(expected.get(stream))):
            return True, []
    if case.type != "positive" and _strings(expected.get("stderr_contains")):
        return True, []
    reasons: list[str] = []
    # Output the case states: one text it must equal, or texts it must contain. Any of them
    # that the command does not announce itself can fail.
    stated = [(stream, text) for stream in ("stdout_equals", "stderr_equals")
              if isinstance(text := expected.get(stream), str)]
    stated += [(stream, text) for stream in ("stdout_contains", "stderr_contains")
               for text in _strings(expected.get(stream))]
    printed = printed_by_the_command(case) if stated else Printed()
    for stream, text in stated:
        if is_success_prose(text):
            reasons.append(f"{stream} {text!r} is the command's own success prose")
        elif _echoed(text, case):
            reasons.append(f"{stream} {text!r} is in the command's own argv")
        elif _printed_itself(text, printed):
            reasons.append(f"{stream} {text!r} is there whatever the skill does: the "
                           "command's own programs print it")
        else:
            return True, []
    if isinstance(artifacts, list) and artifacts:
        reasons.append("its artifact assertions are all optional or only exclude generic "
                       "crash markers")
    for stream in ("stdout_excludes", "stderr_excludes"):
        if _strings(expected.get(stream)):
            reasons.append(f"its {stream} are generic crash markers or texts the trial never "
                           "gives the command")
    return False, reasons or ["no check of what the command did"]
