"""The class page's list of the students most expensive to grade (issue 39, item 7): by the CPU
the grading parent counted for each student's sandboxes, most first, ids shown as text."""

from html.parser import HTMLParser

from autograder.report import SavedResult
from autograder.report.class_page import class_data, most_expensive, render_class_page


def student(name, cpu, wall=30.0):
    results = {"score": 1.0, "max_score": 2.0, "tests": [], "notebooks": {}}
    if cpu is not None:
        results["cpu_seconds"] = cpu
    results["execution_time"] = wall
    return SavedResult(name, results)


class Section(HTMLParser):
    """The text of each row of the table after <h2 id="cost">."""

    def __init__(self):
        super().__init__()
        self.inside, self.rows, self.row, self.scripts = False, [], None, 0

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self.inside = dict(attrs).get("id") == "cost"
        if tag == "script" and self.inside:
            self.scripts += 1
        if self.inside and tag == "tr":
            self.row = []

    def handle_endtag(self, tag):
        if self.inside and tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.inside and self.row is not None and data.strip():
            self.row.append(data.strip())


def test_the_most_expensive_students_are_listed_most_first_against_the_median():
    honest = [student(f"honest{i:02d}", 10.0 + i / 10) for i in range(9)]
    students = [*honest, student("<script>alert(1)</script>", 80.0, wall=400.0)]
    students.append(student("sleeper", 11.0, wall=250.0))
    shown = most_expensive(students, shown=3)
    assert [e["student"] for e in shown] == ["<script>alert(1)</script>", "sleeper", "honest08"]
    median = 10.5  # of the 11 figures: honest 10.0 .. 10.8, 11.0 and 80.0
    assert shown[0]["times_median"] == round(80.0 / median, 1)
    assert shown[0]["wall_seconds"] == 400.0
    page = Section()
    page.feed(render_class_page(class_data(students)))
    assert page.rows[1] == ["<script>alert(1)</script>", "80", "7.6", "400"]
    assert page.scripts == 0  # the id is text, never markup
    assert len(page.rows) == 1 + 5


def test_nothing_counted_nothing_ranked():
    """Without cgroups nobody's CPU is counted: no list of zeros (and a lie is no figure)."""
    students = [student("ada", None), student("bob", 0.0), student("eve", float("nan"))]
    students.append(student("mal", "9e9"))
    assert most_expensive(students) == []
    page = Section()
    page.feed(render_class_page(class_data(students)))
    assert page.rows == []
