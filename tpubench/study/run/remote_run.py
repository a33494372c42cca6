"""A study's cells on a rented executor (`--executor=gce|tpu-vm|gke --cloud=FILE`).

The cells the executor can run go to tpubench-launch as a sweep file
(study/run/remote.py), then the report is written as for local cells.
"""

from __future__ import annotations

from typing import TextIO

from tpubench.core import errors
from tpubench.study.run import plan, remote


def run(study, host, results_dir: str, options, report, out: TextIO) -> int:
    """The cells OPTIONS.executor can run, through tpubench-launch; then REPORT(...) (the API's).

    Returns 0, or the launcher's exit code when it refused the file (it said why) or a dry
    run failed; raises a TpubenchError with the launcher's code when cells failed.
    """
    executor, scale, dry = options.executor, options.scale, options.dry_run
    cloud = remote.load_cloud(options.cloud, executor, options.trust_code)
    p = remote.make_plan(study, scale, executor, cloud, options.gcs_data, results_dir)

    def needs(cell):  # what the report says an unmeasured cell needs: this executor's view
        return p.blocked.get(cell.id)

    def report_all() -> None:
        here = plan.make(study, scale, host, results_dir)
        report(study, here, host, results_dir, needs, f"on {executor}")

    print("\n".join(remote.header(study, p, scale, executor, cloud, results_dir)), file=out)
    out.flush()
    if p.runnable == 0:
        print(
            f"nothing for --executor={executor} to run; the report covers what is recorded",
            file=out,
        )
    else:
        path = remote.write_sweep(study, p, executor, cloud, options.gcs_data, results_dir)
        code = remote.launch(path, executor, dry, out, trust_code=options.trust_code)
        if dry or code == 2:  # 2: the launcher refused the file and said why in one line
            return code
        if code == 130:
            raise errors.InterruptedRun(
                "interrupted; tpubench-launch deleted what it created; run the same command "
                "again to run the cells not yet recorded"
            )
        if code:
            report_all()
            raise errors.TpubenchError(
                f"tpubench-launch exited with code {code} (its lines above say which cells "
                "failed); run the same command again to retry them (recorded cells are skipped)",
                exit_code=code,
            )
    if not dry:
        report_all()
    return 0
