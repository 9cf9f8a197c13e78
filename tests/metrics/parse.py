"""Reads an OpenMetrics exposition on stdin with the Prometheus project's
own parser (prometheus_client, pinned in parse.sh) and prints its samples as
JSON: [{"name", "labels", "value"}]. A document the parser refuses is an
error, and so a failed test."""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

samples = [
    {"name": sample.name, "labels": sample.labels, "value": sample.value}
    for family in text_string_to_metric_families(sys.stdin.read())
    for sample in family.samples
]
json.dump(samples, sys.stdout)
