"""A TensorFlow op failure is one line with its real cause (issue 11, item 7).

The user's model reads a file that is not there inside the traced step, so
TensorFlow raises "Graph execution error:" with the op's own message buried
under the Python stack that built the op.  Before failing, the model also
writes a line in TensorFlow's C++ log format to file descriptor 2, as
TensorFlow's absl logger does on some machines (`W0000 ...
local_rendezvous.cc`).  The console must show one line, and both it and the
record must carry the op's message.
"""

import textwrap

from conftest import one_line_error, run_cli

MODULE = textwrap.dedent(
    """
    import dataclasses
    import os

    import tensorflow as tf

    from tpubench.model import model_api, registry
    from tpubench_models import mnist_mlp


    def model_fn(model, features, labels, mode, params):
        os.write(2, b"W0000 00:00:1795392760.683214    8453 local_rendezvous.cc:412] Local "
                    b"rendezvous is aborting with status: NOT_FOUND\\n\\t [[{{node ReadFile}}]]\\n")
        weights = tf.io.read_file(tf.constant("/no/such/dir/weights.bin"))
        out = model_api.classification_model_fn(model, features, labels, mode, params)
        extra = 0.0 * tf.cast(tf.strings.length(weights), tf.float32)
        return dataclasses.replace(out, per_example_loss=out.per_example_loss + extra)


    registry.register(dataclasses.replace(mnist_mlp.SPEC, name="broken_mlp", model_fn=model_fn))
    """
)
CAUSE = "/no/such/dir/weights.bin; No such file or directory"


def test_graph_execution_error_is_one_line_with_the_cause(tmp_path):
    module = tmp_path / "broken_model.py"
    module.write_text(MODULE)
    proc, record = run_cli(
        "train",
        f"--model_module={module}",
        "--model=broken_mlp",
        "--tiny",
        "--train_steps=2",
        "--use_synthetic_data",
        results_dir=tmp_path / "runs",
    )
    line = one_line_error(proc)  # the C++ log line and its continuation are gone
    assert "local_rendezvous" not in proc.stderr
    assert "NotFoundError" in line and CAUSE in line
    assert record["status"] == "failed"
    assert record["error"].startswith("NotFoundError: " + CAUSE)
    assert "ReadFile" in record["error"]  # the failing op is named
