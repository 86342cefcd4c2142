"""The students' feedback pages: nbconvert's HTMLExporter without its last pass through BeautifulSoup.

Once the template has rendered a page, HTMLExporter parses all of it with BeautifulSoup's pure-Python parser and
prints it again, only to give every image without an alt text nbconvert's stock one, and JupyterLab's cells a
tabindex. A feedback page holds 6,000 tags of highlighted code: that pass was two thirds of the feedback's CPU
time (0.9 of 1.4 s a student). nbgrader's feedback template is the classic one, which has no JupyterLab cells,
so here only the images get their alt text, with the same words (``tests/fast/test_feedback_exporter.py``
checks that the page is HTMLExporter's own).
"""

import re

from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

NO_ALT = "No description has been provided for this image"  # HTMLExporter's own words
IMAGE_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)(?=[\s/>])", re.IGNORECASE)


class FeedbackExporter(HTMLExporter):
    """HTMLExporter, for nbgrader's GenerateFeedback (``exporter_class`` in nbgrader_config.py)."""

    def from_notebook_node(self, nb, resources=None, **kw):
        # What HTMLExporter sets up before it renders: the code highlighter of the notebook's language, and the
        # choice of each output's richest type
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        resources = self._init_resources(resources)
        highlight = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        self.register_filter("highlight_code", highlight)
        types = WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources)
        self.register_filter("filter_data_type", types)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return IMAGE_WITHOUT_ALT.sub(f'<img alt="{NO_ALT}"', html), resources
