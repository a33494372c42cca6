"""The published figures a study is shown beside: its sets, the models it measures.

Published rows sit in their own labelled table and chart series and never
enter a measured figure (report/published.py holds the figures themselves).
"""

from __future__ import annotations

from tpubench.report import published as published_lib

# Our model names -> the published studies' names.
NAMES = {
    "inception_v3": "InceptionV3",
    "resnet50": "ResNet-50",
    "resnet152": "ResNet-152",
    "alexnet": "AlexNet",
    "vgg16": "VGG16",
    "bilstm1024": "bidirectional LSTM text classifier (1024 hidden)",
}


def rows(study) -> list[published_lib.Figure]:
    """The figures of the sets STUDY names, for the models it measures."""
    wanted = set(NAMES[m.model] for p in study.parts for m in p.models if m.model in NAMES)
    if not study.published:
        return []
    return [f for f in published_lib.select(list(study.published)) if f.model in wanted]
