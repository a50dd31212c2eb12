"""Parses Prometheus text (stdin) with prometheus_client's own parser and prints every sample as
JSON: [{"family", "type", "name", "labels", "value"}]. A parse error exits non-zero with it."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        samples.append({"family": family.name, "type": family.type, "name": sample.name,
                        "labels": sample.labels, "value": sample.value})
print(json.dumps(samples))
