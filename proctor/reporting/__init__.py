"""Reports: stored results rendered as HoloDeck, agentflow and Vanna shapes, Markdown and JSON."""

from proctor.reporting.reports import ReportFiles, write_reports
from proctor.reporting.summary import case_rows, summary_markdown

__all__ = ["ReportFiles", "case_rows", "summary_markdown", "write_reports"]
