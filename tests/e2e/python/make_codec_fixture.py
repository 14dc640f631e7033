"""Writes the protobuf body the real Tinker SDK sends for one forward_backward call, for the
codec's unit test (libs/tinker/src/proto/codec.spec.ts).

    PYTHONPATH=tests/e2e/python/vendor:<debian links> python3 tests/e2e/python/make_codec_fixture.py OUT.bin
"""

import sys

import numpy as np
from tinker import types
from tinker.proto.request_conv import forward_backward_request_to_proto

datums = [
    types.Datum(
        model_input=types.ModelInput.from_ints([10, 17, 24, 31]),
        loss_fn_inputs={
            "target_tokens": types.TensorData.from_numpy(np.array([17, 24, 31, 2], dtype=np.int64)),
            "weights": types.TensorData.from_numpy(np.array([0.0, 0.0, 1.0, 1.0], dtype=np.float32)),
        },
    ),
    types.Datum(
        model_input=types.ModelInput(
            chunks=[types.EncodedTextChunk(tokens=[5, 6]), types.EncodedTextChunk(tokens=[7])]
        ),
        loss_fn_inputs={
            "target_tokens": types.TensorData.from_numpy(np.array([6, 7, 8], dtype=np.int64)),
            "logprobs": types.TensorData.from_numpy(np.array([-0.5, -1.25, -2.0], dtype=np.float32)),
            "advantages": types.TensorData.from_numpy(np.array([1.5, 1.5, -0.5], dtype=np.float32)),
        },
    ),
]
request = types.ForwardBackwardRequest(
    forward_backward_input=types.ForwardBackwardInput(
        data=datums, loss_fn="ppo", loss_fn_config={"clip_low_threshold": 0.7, "clip_high_threshold": 1.3}
    ),
    model_id="00000000-0000-4000-8000-000000000001:train:0",
    seq_id=7,
)
with open(sys.argv[1], "wb") as out:
    out.write(forward_backward_request_to_proto(request).SerializeToString())
