"""A supervised loop with the real Tinker SDK, as a user writes it: create a LoRA training
client, forward_backward (cross_entropy) + optim_step a few times, forward, then
save_weights_for_sampler. Prints one JSON object with what the e2e test checks.

    TINKER_API_KEY=tml-<key> python3 sl_loop.py <base_url> <base_model> <token ids as JSON>
"""

import json
import sys

import numpy as np
import tinker
from tinker import types


def main() -> None:
    base_url, base_model, sequences = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    service = tinker.ServiceClient(base_url=base_url)
    capabilities = service.get_server_capabilities()
    training = service.create_lora_training_client(base_model=base_model, rank=8, seed=3)

    data = [
        types.Datum(
            model_input=types.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={
                "target_tokens": np.array(tokens[1:], dtype=np.int64),
                "weights": np.ones(len(tokens) - 1, dtype=np.float32),
            },
        )
        for tokens in sequences
    ]

    losses = []
    logprob_lengths = []
    for _ in range(5):
        # Submitted back to back, as the cookbook's loops do: the service applies them in seq_id order.
        fwd_bwd = training.forward_backward(data, "cross_entropy")
        optim = training.optim_step(types.AdamParams(learning_rate=1e-2))
        result = fwd_bwd.result()
        optim.result()
        losses.append(result.metrics["loss:sum"])
        logprob_lengths = [len(output["logprobs"].tolist()) for output in result.loss_fn_outputs]

    forward = training.forward(data, "cross_entropy").result()
    saved = training.save_weights_for_sampler("sl-final").result()
    print(
        json.dumps(
            {
                "models": [m.model_name for m in capabilities.supported_models],
                "model_id": training.model_id,
                "losses": losses,
                "forward_loss": forward.metrics["loss:sum"],
                "logprob_lengths": logprob_lengths,
                "path": saved.path,
            }
        )
    )


if __name__ == "__main__":
    main()
