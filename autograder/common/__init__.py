"""What several layers share, at the bottom of the package: everything may import it, it imports nothing above it.

problems   the Problem type and the one table of problem kinds (problems.json, --help, the report)
diagnoses  the table of diagnosis kinds, and Reason: a sentence that knows its kind
editions   the course's editions (English, Russian, Simplified Chinese) and where their catalogs are
words      Words: a sentence kept as a key (say, say_n) until it is rendered in an edition's language
translate  what a translator translates (markdown blocks, code comments and strings) and how a translation is put back
edition_text a notebook cell in an edition's language, its links pointed at the edition's files
phases     the phases of a notebook's grading time (grade --profile)
naming     the notebooks' naming conventions (setup cells, the lecture cell, grade_ids)
setup_cells which setup cells need no seed: done once, by the kernel parent and by the grader's reference
links      the course's addresses on the web, from the one repository address
errors     GradingError, the one exception library code raises when a command cannot go on
tools      what every grading process sets up first (``start_up``)
shown      a submission's words as a terminal line and a spreadsheet cell show them: as text (the output boundary)
"""
