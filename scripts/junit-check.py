"""Run by junit-check.sh in its venv: python junit-check.py XSD FILE...

Checks each JUnit file three ways, as three kinds of CI reader would take it,
prints one line per file, and exits 1 if any file fails any check.
"""

import sys
import traceback

import junitparser
import xmlschema
import xunitparser

COUNTS = ("tests", "failures", "errors", "skipped")
OUTCOMES = {junitparser.Failure: "failures", junitparser.Error: "errors", junitparser.Skipped: "skipped"}


class Rejected(Exception):
    pass


def validate(schema, path):
    """Jenkins xunit's reading: the document is valid against junit-10.xsd."""
    errors = [f"{e.path}: {e.reason}" for e in schema.iter_errors(path)]
    if errors:
        raise Rejected("junit-10.xsd rejects it: " + "; ".join(errors))


def count_with_junitparser(path):
    """The cases junitparser finds, by outcome, checked against the counts
    each suite and the root state (raw: junitparser fills in absent ones)."""
    xml = junitparser.JUnitXml.fromfile(path)
    total = dict.fromkeys(COUNTS, 0)
    for suite in xml:
        found = dict.fromkeys(COUNTS, 0)
        for case in suite:
            found["tests"] += 1
            for result in case.result:
                found[OUTCOMES[type(result)]] += 1
        stated_equal(suite._elem, found, f"junitparser: suite {suite.name!r}")
        for key, n in found.items():
            total[key] += n
    stated_equal(xml._elem, total, f"junitparser: <{xml._elem.tag}>")
    return len(list(xml)), total


def stated_equal(elem, found, who):
    for key, n in found.items():
        stated = elem.get(key)
        if stated is not None and int(stated) != n:
            raise Rejected(f"{who} says {key}={stated} but has {n}")


def count_with_xunitparser(path):
    """xunitparser's reading: it asserts the root's counts, its suites' tag
    and that no property name repeats across suites."""
    with open(path, "rb") as f:
        try:
            suite, result = xunitparser.parse(f)
        except AssertionError as e:
            failed = traceback.extract_tb(e.__traceback__)[-1].line
            raise Rejected(f"xunitparser's own check fails: {failed}")
    cases = len(list(suite))
    return dict(zip(COUNTS, (cases, len(result.failures), len(result.errors), len(result.skipped))))


def check(schema, path):
    validate(schema, path)
    suites, counts = count_with_junitparser(path)
    theirs = count_with_xunitparser(path)
    if theirs != counts:
        raise Rejected(f"xunitparser counts {theirs}, junitparser {counts}")
    return (
        f"valid against junit-10.xsd; junitparser and xunitparser agree: {suites} suites, "
        f"{counts['tests']} tests, {counts['failures']} failures, {counts['errors']} errors, "
        f"{counts['skipped']} skipped"
    )


def main():
    schema = xmlschema.XMLSchema(sys.argv[1])
    status = 0
    for path in sys.argv[2:]:
        try:
            print(f"{path}: ok: {check(schema, path)}")
        except Rejected as e:
            print(f"{path}: FAILED: {e}")
            status = 1
        except Exception as e:
            print(f"{path}: FAILED: {type(e).__name__}: {e}")
            status = 1
    sys.exit(status)


main()
