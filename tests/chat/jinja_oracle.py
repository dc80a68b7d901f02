#!/usr/bin/python3
"""Oracle for tests/chat: renders a chat template with Python's Jinja2, configured the way
transformers' apply_chat_template configures it (trim_blocks, lstrip_blocks, loop controls,
tojson = json.dumps(ensure_ascii=False), raise_exception, strftime_now).

stdin: JSON {"template": str, "context": {...}, "now_unix": int}
stdout: the rendered text (UTF-8), exit 0; on a template error: the message on stderr, exit 3.
Batch form: {"batch": [{"template", "context"}...], "now_unix": int, "optimized": bool} prints a
JSON list of {"ok": bool, "text": str} (text = rendering or error message), exit 0. optimized=false
turns off Jinja2's constant folder, which evaluates constant sub-expressions through a more lenient
path (e.g. a constant `none[1:]` folds to Undefined while a variable's slice raises TypeError).
Exit 2 when jinja2 is not importable (the C++ test skips then).
"""
import datetime
import json
import sys

try:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("jinja2 not importable\n")
    sys.exit(2)


class TemplateRaised(Exception):
    pass


def main():
    req = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    now = datetime.datetime.fromtimestamp(req.get("now_unix", 0), tz=datetime.timezone.utc)

    def raise_exception(message):
        raise TemplateRaised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols],
                                        optimized=req.get("optimized", True))
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    def render(template, context):
        try:
            return True, env.from_string(template).render(**context)
        except Exception as e:  # any template failure is reported, not crashed on
            return False, "%s: %s" % (type(e).__name__, e)

    if "batch" in req:
        results = [render(r["template"], r.get("context", {})) for r in req["batch"]]
        out = json.dumps([{"ok": ok, "text": text} for ok, text in results], ensure_ascii=False)
        sys.stdout.buffer.write(out.encode("utf-8"))
        return
    ok, text = render(req["template"], req["context"])
    if not ok:
        sys.stderr.write(text + "\n")
        sys.exit(3)
    sys.stdout.buffer.write(text.encode("utf-8"))


if __name__ == "__main__":
    main()
