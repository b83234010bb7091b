#!/usr/bin/env python3
"""Check emitted grammars with the real llguidance engine.

Usage:
    python3 tests/grammar/check.py CASES.json [--failures FILE]
                                   [--known-failures FILE] [--jobs N]
                                   [--label NAME]
    python3 tests/grammar/check.py --self-test

CASES.json holds {"cases": [...]}; each case has "template", "name", "gbnf"
(llama.cpp GBNF, start rule `root`), "lark" (llguidance Lark, start rule
`start`), "lazy", "triggers", "accept" and "reject".  Every grammar is checked
in two forms: the Lark text compiled directly, and the GBNF text converted by
llguidance's own converter (llguidance.gbnf_to_lark.gbnf_to_lark) and then
compiled.  Texts are fed to an LLMatcher byte by byte (LLTokenizer("byte"):
one token per byte).  See README.md in this directory.

Exit status: 0 all templates pass (or every failing one is listed in
--known-failures), 1 failures, 2 bad input, 3 llguidance is not installed.
"""

import argparse
import json
import os
import re
import sys
import time

EXIT_OK, EXIT_FAIL, EXIT_INPUT, EXIT_SKIP = 0, 1, 2, 3
FORMS = ("gbnf", "lark")
CHUNK = 1024            # tokens fed per consume_tokens call
SHORT = 200             # length of a failure line on stdout
LINES_PER_TEMPLATE = 3  # failure lines printed per failing template
# Engine errors that are resource limits (e.g. "Current row has 2001 items; max
# is 2000" for deep right recursion), not a verdict on the text.
LIMIT_RX = re.compile(r"max is|too complex|fuel|limit exceeded", re.I)


def import_llguidance():
    """Return (llguidance module, gbnf_to_lark function) or None."""
    try:
        import llguidance
        from llguidance.gbnf_to_lark import gbnf_to_lark
    except ImportError:
        return None
    return llguidance, gbnf_to_lark


def skip_if_missing(label="grammar"):
    mods = import_llguidance()
    if mods is None:
        print("%s: SKIP llguidance not installed (pip install llguidance)" % label)
        sys.exit(EXIT_SKIP)
    return mods


def one_line(s, limit=SHORT):
    """First part of an engine message (without its parser-state dump), on one line."""
    s = str(s)
    cut = s.find("\n<state>")
    if cut >= 0:
        s = s[:cut]
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


class Engine:
    """Compiles grammars and matches byte strings with llguidance."""

    def __init__(self):
        mods = import_llguidance()
        if mods is None:
            raise RuntimeError("llguidance not installed")
        self.llg, self.gbnf_to_lark = mods
        self.tok = self.llg.LLTokenizer("byte")
        # Byte -> token id.  For the byte tokenizer this is the identity for
        # 0x00..0xfe (0xff never occurs in UTF-8); check rather than assume.
        table = []
        for b in range(256):
            ids = self.tok.tokenize_bytes(bytes([b]))
            table.append(ids[0] if len(ids) == 1 else None)
        self.identity = all(table[b] == b for b in range(255))
        self.table = table

    def tokens(self, data):
        if self.identity and 0xFF not in data:
            return list(data)
        return [self.table[b] if self.table[b] is not None else self.table[0xFF] for b in data]

    def lark_of(self, form, source):
        """(lark text, error) for a case's grammar in the given form."""
        if not isinstance(source, str) or not source.strip():
            return None, "no %s grammar in the input" % form
        if form == "lark":
            return source, None
        try:
            return self.gbnf_to_lark(source), None
        except Exception as e:  # the converter raises plain Exceptions too
            return None, "gbnf_to_lark: %s" % e

    def compile(self, lark):
        """(matcher in its initial state, error, warnings)."""
        M = self.llg.LLMatcher
        grammar = M.grammar_from_lark(lark)
        is_err, msgs = M.validate_grammar_with_warnings(grammar, self.tok)
        if is_err:
            return None, msgs[0] if msgs else "invalid grammar", []
        m = M(self.tok, grammar, log_level=0)
        if m.is_error():
            return None, m.get_error(), []
        return m, None, list(msgs)

    def match(self, base, data, deadline=None):
        """Feed `data` (bytes) to a copy of `base`.

        Returns (accepted, byte position of the failure or None, message)."""
        toks = self.tokens(data)
        n = len(toks)
        m = base.deep_copy()
        i = 0
        while i < n:
            chunk = toks[i:i + CHUNK]
            if not m.consume_tokens(chunk):
                # Find the byte: replay the good prefix, then go one by one.
                m = base.deep_copy()
                if i:
                    m.consume_tokens(toks[:i])
                for j, t in enumerate(chunk):
                    if not m.consume_token(t):
                        return False, i + j, m.get_error() or "rejected"
                return False, i, m.get_error() or "rejected"
            i += len(chunk)
            if deadline is not None and i < n and time.monotonic() > deadline:
                return False, i, "timeout: engine too slow, gave up after byte %d of %d" % (i, n)
        if m.is_accepting():
            return True, None, ""
        return False, n, "not accepting at end of text (the text is only a prefix of the grammar)"


def trigger_start(text, triggers):
    """Character offset where the constrained part of a lazy text starts, or None.

    The earliest start over all triggers wins.  As in llama.cpp's sampler:
      word:         the first plain occurrence of the word;
      pattern:      re.search; the start of the match (llama.cpp wraps word and
                    pattern triggers as ^[\s\S]*?(p1|p2|...)[\s\S]*);
      pattern_full: re.match at the text start; the start of the first
                    non-empty capture group, else 0."""
    best = None
    for trig in triggers:
        kind, value = trig.get("type"), trig.get("value", "")
        pos = None
        if kind == "word":
            i = text.find(value) if value else -1
            pos = i if i >= 0 else None
        elif kind == "pattern":
            mt = re.search(value, text)
            pos = mt.start() if mt else None
        elif kind == "pattern_full":
            mt = re.match(value, text)
            if mt:
                pos = 0
                for g in range(1, (mt.re.groups or 0) + 1):
                    if mt.start(g) >= 0 and mt.end(g) > mt.start(g):
                        pos = mt.start(g)
                        break
        else:
            raise ValueError("unknown trigger type %r" % (kind,))
        if pos is not None and (best is None or pos < best):
            best = pos
    return best


def context(data, pos, before=40, after=20):
    s = data[max(0, pos - before):pos].decode("utf-8", "replace")
    t = data[pos:pos + after].decode("utf-8", "replace")
    return "%r|%r" % (s, t)


def check_case(engine, case, timeout):
    """Check one case in both forms.  Returns a result dict (JSON-ready)."""
    template = str(case.get("template", "?"))
    name = str(case.get("name", "?"))
    lazy = bool(case.get("lazy", False))
    triggers = case.get("triggers") or []
    texts = [("accept", i, t) for i, t in enumerate(case.get("accept") or [])]
    texts += [("reject", i, t) for i, t in enumerate(case.get("reject") or [])]
    failures, warnings = [], []

    def fail(form, kind, index, message, **extra):
        rec = {"template": template, "case": name, "form": form, "kind": kind,
               "index": index, "message": str(message)}
        rec.update(extra)
        failures.append(rec)

    # Which part of each text is constrained (same for both forms).
    work = []  # (kind, index, text, offset in bytes of the constrained part, bytes)
    for kind, i, text in texts:
        if not isinstance(text, str):
            fail("both", kind, i, "text is not a string")
            continue
        start = 0
        if lazy:
            try:
                start = trigger_start(text, triggers)
            except (re.error, ValueError, AttributeError) as e:
                fail("both", kind, i, "bad trigger: %s" % e)
                continue
            if start is None:
                msg = ("no trigger in accept text" if kind == "accept" else
                       "reject text has no trigger (an unconstrained reply is allowed, "
                       "so it can never be rejected)")
                fail("both", kind, i, msg, text=text)
                continue
        prefix = text[:start].encode("utf-8", "surrogatepass")
        work.append((kind, i, text, len(prefix),
                     text[start:].encode("utf-8", "surrogatepass")))

    for form in FORMS:
        lark, err = engine.lark_of(form, case.get(form))
        base = None
        if err is None:
            base, err, warns = engine.compile(lark)
            warnings += ["%s: %s" % (form, one_line(w, 1000)) for w in warns]
        if err is not None:
            fail(form, "compile", None,
                 "grammar does not compile (fails all %d texts): %s" % (len(texts), err),
                 lark=lark)
            continue
        for kind, i, text, off, data in work:
            deadline = time.monotonic() + timeout if timeout else None
            ok, pos, msg = engine.match(base, data, deadline)
            if msg.startswith("timeout"):
                fail(form, kind, i, msg, position=off + pos, text=text)
            elif kind == "accept" and not ok:
                if pos == len(data) and msg.startswith("not accepting"):
                    what = "incomplete: the text ends (byte %d) where the grammar expects more %s" % (
                        off + pos, context(data, pos))
                else:
                    what = "rejected at byte %d %s: %s" % (off + pos, context(data, pos), msg)
                fail(form, kind, i, what, position=off + pos, engine_error=msg, text=text)
            elif kind == "reject" and ok:
                fail(form, kind, i, "accepted, should be rejected", text=text)
            elif kind == "reject" and LIMIT_RX.search(msg):
                fail(form, kind, i, "engine limit at byte %d, not a rejection: %s" % (off + pos, msg),
                     position=off + pos, engine_error=msg, text=text)

    n_acc = len(case.get("accept") or [])
    n_rej = len(case.get("reject") or [])
    return {"template": template, "case": name, "accept": n_acc, "reject": n_rej,
            "failures": failures, "warnings": warnings}


# Worker side of the process pool: one Engine per process.
_ENGINE = None
_TIMEOUT = None


def _worker_init(timeout):
    global _ENGINE, _TIMEOUT
    _ENGINE, _TIMEOUT = Engine(), timeout


def _worker_run(case):
    return check_case(_ENGINE, case, _TIMEOUT)


def run_cases(cases, jobs=1, timeout=30.0):
    """Check all cases; results in input order."""
    if jobs <= 1 or len(cases) < 2:
        engine = Engine()
        return [check_case(engine, c, timeout) for c in cases]
    import multiprocessing as mp
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else None)
    with ctx.Pool(jobs, initializer=_worker_init, initargs=(timeout,)) as pool:
        return list(pool.imap(_worker_run, cases, chunksize=1))


def summarize(results):
    """template -> list of failures, in first-seen order of templates."""
    per = {}
    for r in results:
        per.setdefault(r["template"], []).extend(r["failures"])
    return per


def short_line(f):
    idx = "" if f["index"] is None else " #%d" % f["index"]
    s = "%s %s [%s] %s%s: %s" % (f["template"], f["case"], f["form"], f["kind"], idx,
                                 one_line(f["message"], 10_000))
    return s if len(s) <= SHORT else s[:SHORT - 3] + "..."


def read_known(path):
    names = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def main(argv=None):
    ap = argparse.ArgumentParser(description="Validate emitted GBNF and Lark grammars with llguidance.")
    ap.add_argument("cases", nargs="?", help="JSON file with {\"cases\": [...]}")
    ap.add_argument("--failures", metavar="FILE", help="write all failure details as JSON")
    ap.add_argument("--known-failures", metavar="FILE",
                    help="templates (one a line, # comments) that are allowed to fail")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (default: number of CPUs)")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds per text before giving up (default 30)")
    ap.add_argument("--self-test", action="store_true", help="run the built-in checks")
    ap.add_argument("--label", default="grammar",
                    help="prefix of the summary lines (default: grammar)")
    args = ap.parse_args(argv)
    label = args.label

    skip_if_missing(label)
    if args.self_test:
        self_test()
        return EXIT_OK
    if not args.cases:
        ap.error("a cases file is required (or --self-test)")

    try:
        with open(args.cases, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        print("%s: cannot read %s: %s" % (label, args.cases, e))
        return EXIT_INPUT
    cases = doc.get("cases") if isinstance(doc, dict) else None
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        print('%s: cannot read %s: expected {"cases": [objects]}' % (label, args.cases))
        return EXIT_INPUT
    known = read_known(args.known_failures) if args.known_failures else []

    t0 = time.monotonic()
    results = run_cases(cases, jobs=args.jobs, timeout=args.timeout)
    elapsed = time.monotonic() - t0

    per = summarize(results)
    failing = [t for t, fs in per.items() if fs]
    n_acc = sum(r["accept"] for r in results)
    n_rej = sum(r["reject"] for r in results)
    print("%s: %d cases, %d accept texts, %d reject texts" % (label, len(results), n_acc, n_rej))
    for t in failing:
        fs = per[t]
        tag = " (known)" if t in known else ""
        for f in fs[:LINES_PER_TEMPLATE]:
            print("  FAIL%s %s" % (tag, short_line(f)))
        if len(fs) > LINES_PER_TEMPLATE:
            print("  ... %d more failure(s) for %s" % (len(fs) - LINES_PER_TEMPLATE, t))
    print("%s: %d/%d templates accept all, reject all" % (label, len(per) - len(failing), len(per)))
    print("%s: checked in %.1fs with %d job(s), llguidance %s"
          % (label, elapsed, max(1, args.jobs), getattr(import_llguidance()[0], "__version__", "?")))

    for t in known:
        if t in per and not per[t]:
            print("%s: note: %s now passes, remove it from the list" % (label, t))

    if args.failures:
        detail = {"templates": {t: {"pass": not fs, "known": t in known} for t, fs in per.items()},
                  "failures": [f for t in failing for f in per[t]],
                  "warnings": [{"template": r["template"], "case": r["case"], "warnings": r["warnings"]}
                               for r in results if r["warnings"]]}
        with open(args.failures, "w", encoding="utf-8") as fh:
            json.dump(detail, fh, indent=1, ensure_ascii=False)

    unexpected = [t for t in failing if t not in known]
    return EXIT_FAIL if unexpected else EXIT_OK


def self_test():
    """Small inline grammars; asserts that accept/reject behave."""
    number = {
        "template": "t-number", "name": "number", "lazy": False, "triggers": [],
        "gbnf": 'root ::= "{" [0-9]{1,3} "}"',
        "lark": 'start: "{" /[0-9]/{1,3} "}"',
        "accept": ["{1}", "{123}"],
        "reject": ["{}", "{1234}", "{1}x", "{1", ""],
    }
    # Lazy: free text until the trigger, then a tool call whose value is any
    # text up to "</value>" (may contain "<" and "</v").  "</value>" is written
    # as single-character literals: as one literal, llguidance's lexer would
    # commit to it after "</v" and reject "a</vb</value>".
    close = " ".join('"%s"' % c for c in "</value>")
    tool = {
        "template": "t-tool", "name": "lazy/word", "lazy": True,
        "triggers": [{"type": "word", "value": "<call>"}],
        "gbnf": 'root ::= "<call>" [a-z]+ "=" ([^<] | "<")* %s' % close,
        "lark": 'start: "<" "c" "a" "l" "l" ">" /[a-z]/+ "=" (/[^<]/ | "<")* %s' % close,
        "accept": ["I will call it. <call>city=Paris</value>", "<call>x=</value>",
                   "text <call>f=a<b</value>"],
        "reject": ["hi <call>CITY=Paris</value>", "<call>x=1</value> trailing",
                   "<call>x=1</valu"],
    }
    tool_lazy_lexer = dict(tool, name="lazy/value-with-tag",
                           accept=["<call>x=a</vb</value>"], reject=[])
    pattern = {
        "template": "t-pattern", "name": "lazy/pattern", "lazy": True,
        "triggers": [{"type": "pattern", "value": r"\[TOOL\]"}],
        "gbnf": 'root ::= "[TOOL]" [0-9]+',
        "lark": 'start: "[" "T" "O" "O" "L" "]" /[0-9]/+',
        "accept": ["ok  [TOOL]42"],
        "reject": ["ok [TOOL]4x2"],
    }
    broken = {
        "template": "t-broken", "name": "broken", "lazy": True,
        "triggers": [{"type": "word", "value": "<x>"}],
        "gbnf": 'root ::= "<x>" undefined-rule',
        "lark": 'start: "<x>" /[/',
        "accept": ["<x>a"],
        "reject": ["no trigger here"],
    }
    assert trigger_start("a <b> <c>", [{"type": "word", "value": "<c>"},
                                       {"type": "pattern", "value": r"<[a-z]>"}]) == 2
    assert trigger_start("x <think>t</think> <call>", [
        {"type": "pattern_full", "value": r"(?:x <think>[\s\S]*?</think>)?\s*(<call>)[\s\S]*"}]) == 19
    assert trigger_start("nothing", [{"type": "word", "value": "<c>"}]) is None

    engine = Engine()
    assert engine.identity, "byte tokenizer: byte b is no longer token b"

    for case in (number, tool, tool_lazy_lexer, pattern):
        r = check_case(engine, case, 30.0)
        assert not r["failures"], "%s: %s" % (case["name"], [short_line(f) for f in r["failures"]])

    r = check_case(engine, broken, 30.0)
    kinds = sorted((f["form"], f["kind"]) for f in r["failures"])
    assert kinds == [("both", "reject"), ("gbnf", "compile"), ("lark", "compile")], kinds
    assert "reject text has no trigger" in r["failures"][0]["message"]

    # A wrong expectation is reported, with the byte where the engine stopped.
    wrong = dict(number, accept=["{12x}"], reject=["{7}"])
    r = check_case(engine, wrong, 30.0)
    msgs = {(f["form"], f["kind"]): f for f in r["failures"]}
    assert set(msgs) == {("gbnf", "accept"), ("lark", "accept"), ("gbnf", "reject"),
                         ("lark", "reject")}, msgs
    assert msgs[("lark", "accept")]["position"] == 3, msgs[("lark", "accept")]

    # Per-template aggregation (also through the process pool).
    results = run_cases([number, tool, broken], jobs=2)
    per = summarize(results)
    assert [t for t, fs in per.items() if fs] == ["t-broken"], per
    print("self-test ok")


if __name__ == "__main__":
    sys.exit(main())
