"""nbgrader configuration of the Backprop Ninja course (run nbgrader from this folder)."""

import warnings

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    ClearHiddenTests,
    ClearOutput,
    DeduplicateIds,
    IgnorePattern,
    LimitOutput,
    OverwriteKernelspec,
)
from sqlalchemy.exc import SAWarning

from autograder.common.tools import use_own_tools
from autograder.preprocessors import (
    CheckCellMetadataOnce,
    FeedbackExporter,
    GetGradesAtOnce,
    GradingExecute,
    HiddenTestsOutOfOutputs,
    JudgeAnswers,
    LatePenalty,
    RestoreLockedCells,
    SafeOutputMetadata,
    SaveAutoGradesAtOnce,
    SummarizeSteps,
    TidyFeedback,
)

c = get_config()  # noqa: F821 (provided by nbgrader)
use_own_tools()  # nbgrader runs alembic by name when it makes a gradebook: the one beside this Python

# nbgrader 0.9.6 with SQLAlchemy 2 prints three of these (400 characters each) whenever it adds a student's
# submission to the gradebook; the submission is added all the same.
warnings.filterwarnings("ignore", r"Object of type <Submitted\w+> not in session", SAWarning)

c.CourseDirectory.course_id = "backprop_ninja"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__"]  # names.txt goes out with the release
# The setup cells that hold a hidden part (the grading seed, the grading switches) are locked cells, not 0-point
# grade cells: nbgrader restores every locked cell at autograde, hidden part included, and the Formgrader and the
# feedback list no empty "0 / 0" cells. nbgrader would refuse a hidden region outside a grade cell; a fast test
# (test_every_hidden_region_is_in_a_locked_cell) keeps them where autograde restores them.
c.ClearHiddenTests.enforce_metadata = False

# Autograde: the submission's locked cells restored (nbgrader's sanitizing, with one log line per notebook for the
# hidden tests put back instead of a warning per cell; nbgrader's metadata check, its schema compiled once), ...
c.Autograde.sanitize_preprocessors = [
    ClearOutput,
    DeduplicateIds,
    OverwriteKernelspec,
    RestoreLockedCells,
    CheckCellMetadataOnce,
]
# ... then run with an unseen seed, then judge every graded cell outside the student's kernel; the grades saved as
# nbgrader's SaveAutoGrades saves them, its rows read and committed at once (one commit a notebook, not one a cell).
c.Autograde.autograde_preprocessors = [
    GradingExecute,
    SafeOutputMetadata,  # (what an image's tag is made of: the Formgrader shows this notebook)
    JudgeAnswers,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGradesAtOnce,
    AssignLatePenalties,
    CheckCellMetadataOnce,
]
# The notebook's metadata goes, but for the edition RestoreLockedCells read from its words (feedback in its language)
c.ClearMetadataPreprocessor.preserve_nb_metadata_mask = {("language_info", "name"), ("backprop_ninja",)}
# A warning printed to stderr in a graded cell would otherwise cost the cell its points.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"Warning|warn\("
# nbconvert checks the notebook against nbformat's schema once, after all of a pass's preprocessors, not after each
# (13 checks a notebook otherwise)
c.Exporter.optimistic_validation = True
# One slow cell must not drop the whole submission.
c.Execute.timeout = 120
c.Execute.raise_on_iopub_timeout = False
# IPython compiles every cell a second time only to see whether it awaits at the top level (37 ms a notebook here):
# no cell of the course does (one that did would raise a SyntaxError). Its SQLite history, written by a thread of its
# own after every cell, cost a plain kernel 1.4 ms of CPU a cell (in the sandbox, within the noise); the grader reads
# only the history kept in memory (In), which stays. ipykernel sleeps 0.5 ms before each execute_reply (its FIXME, for
# output that might arrive after the reply); nbclient waits for the idle status that follows every output on IOPub, so
# the sleep only idled the kernel: 1,000 cells of a plain kernel took 2.28-2.35 ms each without it, 2.67-2.80 with it.
c.GradingExecute.extra_arguments = [
    "--InteractiveShell.autoawait=False",
    "--HistoryManager.enabled=False",
    "--IPythonKernel._execute_sleep=0",
]

# Late submissions. The due date is nbgrader's own, in the gradebook:
#   nbgrader db assignment add backprop_ninja --duedate="2026-12-15 23:59:00 Europe/Berlin"
# and a submission's time is the timestamp.txt beside its notebooks (nbgrader collect writes it; an LMS
# download's student folders may carry one). Each notebook then loses 10% of its score per started day late.
c.AssignLatePenalties.plugin_class = LatePenalty
c.LatePenalty.percent_per_day = 10
c.LatePenalty.grace_minutes = 15
c.LatePenalty.max_percent = 100

# nbgrader's exchange (a JupyterHub: docs/jupyterhub.md). Collect takes each student's newest submission that they
# made themselves, and only its notebooks, as regular files; nbgrader's own takes the newest in a student's name,
# whoever made it, and follows links (autograder/grading/intake/owned_collect.py). Named, so it loads only to collect.
c.ExchangeFactory.collect = "autograder.grading.intake.owned_collect.OwnedCollect"

# Feedback: scores and the grader's messages, never the hidden test code; it opens with a table of the
# steps (SummarizeSteps, after the scores and the page's styles), and its links work outside the repository.
# TidyFeedback, last, leaves out what only nbgrader needed (the verdicts' points as numbers).
c.GenerateFeedback.preprocessors = [
    GetGradesAtOnce,
    SafeOutputMetadata,
    HiddenTestsOutOfOutputs,
    ClearHiddenTests,
    CSSHTMLHeaderPreprocessor,
    SummarizeSteps,
    TidyFeedback,
]
# The pages: nbconvert's HTMLExporter without its BeautifulSoup pass over every page (0.9 of 1.4 CPU s a student)
c.GenerateFeedback.exporter_class = FeedbackExporter
# Every HTMLExporter of the course (the Formgrader's, that shows the staff a submission) cleans what a submission
# controls: its outputs and markdown cells hold no script (autograder/preprocessors/safe_html.py); FeedbackExporter
# does so already, with the same filters
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.filters = {
    "clean_html": "autograder.preprocessors.safe_html.clean_html",
    "markdown2html": "autograder.preprocessors.safe_html.CleanMarkdown",
}
