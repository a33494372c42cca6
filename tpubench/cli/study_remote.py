"""`tpubench study run NAME --executor=gce|tpu-vm|gke --cloud=FILE`: the CLI side.

The cells the executor can run go to tpubench-launch as a sweep file
(study/remote.py), then the report is written as for local cells.
"""

from __future__ import annotations

import sys

from absl import flags

FLAGS = flags.FLAGS


def run(study, host, results_dir: str, report) -> int:
    """The cells --executor can run, through tpubench-launch; then REPORT(...) (cli/study.py's)."""
    from tpubench.core import errors
    from tpubench.study import plan, remote

    executor, scale, dry = FLAGS.executor, FLAGS.scale, FLAGS["dry-run"].value
    cloud = remote.load_cloud(FLAGS.cloud, executor, FLAGS.trust_code)
    p = remote.make_plan(study, scale, executor, cloud, FLAGS.gcs_data, results_dir)

    def needs(cell):  # what the report says an unmeasured cell needs: this executor's view
        return p.blocked.get(cell.id)

    def report_all() -> None:
        here = plan.make(study, scale, host, results_dir)
        report(study, here, host, results_dir, needs, f"on {executor}")

    print("\n".join(remote.header(study, p, scale, executor, cloud, results_dir)), flush=True)
    if p.runnable == 0:
        print(f"nothing for --executor={executor} to run; the report covers what is recorded")
    else:
        path = remote.write_sweep(study, p, executor, cloud, FLAGS.gcs_data, results_dir)
        code = remote.launch(path, executor, dry, sys.stdout, trust_code=FLAGS.trust_code)
        if dry or code == 2:  # 2: the launcher refused the file and said why in one line
            return code
        if code == 130:
            raise errors.InterruptedRun(
                "interrupted; tpubench-launch deleted what it created; run the same command "
                "again to run the cells not yet recorded"
            )
        if code:
            report_all()
            err = errors.TpubenchError(
                f"tpubench-launch exited with code {code} (its lines above say which cells "
                "failed); run the same command again to retry them (recorded cells are skipped)"
            )
            err.exit_code = code
            raise err
    if dry:
        return 0
    report_all()
    return 0
