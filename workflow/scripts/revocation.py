"""Revocation measured: two runs, a group removed from one document's ACL and another document deleted."""

import json

import pandas as pd

from rag.ask.index import documents_and_question_sets
from rag.ask.revocation import COLUMNS, Revocation, RevocationError, leaks, measure_revocation
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
setting = json.loads(snakemake.params.revocation)
documents, question_sets = documents_and_question_sets(snakemake.params.folder, snakemake.input.questions, [])
revocation = Revocation(
    tuple(setting["groups"]), setting["revoke"], setting["group"], setting["delete"], setting.get("copied")
)
try:
    rows = measure_revocation(documents, [q.text for q in question_sets["development"]], revocation)
except RevocationError as error:
    raise SystemExit(f"Error: {error}") from None
found = leaks(rows)
for line in found:
    log.error("revoked text reached a caller: %s", line)
log.info("%d rows; %d places where revoked text reached a caller who lost it", len(rows), len(found))
write_csv(pd.DataFrame(rows, columns=list(COLUMNS)), snakemake.output[0])
finish_job()
