"""The real Tinker SDK's loops, as a user writes them: create a LoRA training client,
forward_backward (cross_entropy) + optim_step a few times, forward, save_state and a second
client made from that state, save_weights_for_sampler;
then sample from the saved weights (through chat completions, with logprobs and token ids),
score the sample with the trainer (forward) and take one RL step (importance_sampling) on it.
Prints one JSON object with what the e2e test checks.

    TINKER_API_KEY=tml-<key> python3 sl_loop.py <base_url> <base_model> <token ids as JSON> <model name prefix>
"""

import json
import os
import sys

import httpx
import numpy as np
import tinker
from tinker import types


def datum(tokens, **inputs):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": np.array(tokens[1:], dtype=np.int64), **inputs},
    )


def main() -> None:
    base_url, base_model, sequences, served_prefix = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    service = tinker.ServiceClient(base_url=base_url)
    capabilities = service.get_server_capabilities()
    training = service.create_lora_training_client(base_model=base_model, rank=8, seed=3)

    data = [datum(tokens, weights=np.ones(len(tokens) - 1, dtype=np.float32)) for tokens in sequences]

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

    # save_state, then a new training client from it (weights_info, create_model, load_state
    # with the optimizer): both take the same next step.
    state = training.save_state("sl-state").result()
    resumed = service.create_training_client_from_state_with_optimizer(state.path)
    resumed_loss = resumed.forward(data, "cross_entropy").result().metrics["loss:sum"]
    next_losses = []
    for client in (training, resumed):
        client.forward_backward(data, "cross_entropy").result()
        client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
        next_losses.append(client.forward(data, "cross_entropy").result().metrics["loss:sum"])

    saved = training.save_weights_for_sampler("sl-final").result()

    # Sampling through the SDK: a sampling client on the saved path, and one that
    # save_weights_and_get_sampling_client makes (unnamed weights, the same training state), with
    # the same seed: the same tokens. The trainer then scores prompt and sample.
    prompt_ids_sdk = sequences[0][:5]
    params = types.SamplingParams(max_tokens=6, temperature=1.0, seed=7)
    by_path = service.create_sampling_client(model_path=saved.path)
    sdk_sample = by_path.sample(
        prompt=types.ModelInput.from_ints(prompt_ids_sdk), num_samples=2, sampling_params=params, include_prompt_logprobs=True
    ).result()
    by_session = training.save_weights_and_get_sampling_client()
    session_sample = by_session.sample(prompt=types.ModelInput.from_ints(prompt_ids_sdk), num_samples=1, sampling_params=params).result()
    sdk_tokens = list(sdk_sample.sequences[0].tokens)
    sdk_all = prompt_ids_sdk + sdk_tokens
    sdk_scored = training.forward([datum(sdk_all, weights=np.ones(len(sdk_all) - 1, dtype=np.float32))], "cross_entropy").result()
    sdk_trainer = sdk_scored.loss_fn_outputs[0]["logprobs"].tolist()

    # Sample from the saved weights (chat completions serve them under the training client's
    # model name), then score the same tokens with the trainer.
    key = os.environ["TINKER_API_KEY"].removeprefix("tml-")
    served = served_prefix + training.model_id.replace(":", "-")
    reply = httpx.post(
        f"{base_url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={
            "model": served,
            "messages": [{"role": "user", "content": "hello"}],
            "max_tokens": 6,
            "temperature": 1.0,
            "seed": 11,
            "logprobs": True,
            "return_token_ids": True,
        },
        timeout=120,
    ).json()
    choice = reply["choices"][0]
    prompt_ids, completion_ids = reply["prompt_token_ids"], choice["token_ids"]
    sampled_logprobs = [entry["logprob"] for entry in choice["logprobs"]["content"]]
    tokens = prompt_ids + completion_ids
    scored = training.forward([datum(tokens, weights=np.ones(len(tokens) - 1, dtype=np.float32))], "cross_entropy").result()
    trainer_logprobs = scored.loss_fn_outputs[0]["logprobs"].tolist()[len(prompt_ids) - 1 :]

    # One RL step on the sample: the sampler's logprobs on the completion, 0 on the prompt.
    n_prompt = len(prompt_ids) - 1
    rl = datum(
        tokens,
        logprobs=np.array([0.0] * n_prompt + sampled_logprobs, dtype=np.float32),
        advantages=np.array([0.0] * n_prompt + [1.0] * len(completion_ids), dtype=np.float32),
    )
    rl_result = training.forward_backward([rl], "importance_sampling").result()
    training.optim_step(types.AdamParams(learning_rate=1e-3)).result()
    ppo_result = training.forward([rl], "ppo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}).result()

    # The REST client's listings: this key's training runs and what each saved.
    rest = service.create_rest_client()
    runs = rest.list_training_runs().result()
    run = rest.get_training_run(training.model_id).result()
    checkpoints = rest.list_checkpoints(training.model_id).result()

    print(
        json.dumps(
            {
                "models": [m.model_name for m in capabilities.supported_models],
                "model_id": training.model_id,
                "losses": losses,
                "forward_loss": forward.metrics["loss:sum"],
                "logprob_lengths": logprob_lengths,
                "path": saved.path,
                "state_path": state.path,
                "resumed_model_id": resumed.model_id,
                "resumed_loss": resumed_loss,
                "next_losses": next_losses,
                "sampled_logprobs": sampled_logprobs,
                "trainer_logprobs": trainer_logprobs,
                "rl_loss": rl_result.metrics["loss:sum"],
                "completion_tokens": len(completion_ids),
                "ppo_loss": ppo_result.metrics["loss:sum"],
                "sdk_samples": len(sdk_sample.sequences),
                "sdk_tokens": sdk_tokens,
                "sdk_stop_reason": str(sdk_sample.sequences[0].stop_reason),
                "sdk_logprobs": list(sdk_sample.sequences[0].logprobs or []),
                "sdk_prompt_logprobs": [None if lp is None or lp != lp else lp for lp in (sdk_sample.prompt_logprobs or [])],
                "sdk_trainer_logprobs": sdk_trainer,
                "session_tokens": list(session_sample.sequences[0].tokens),
                "runs": [r.training_run_id for r in runs.training_runs],
                "runs_total": runs.cursor.total_count,
                "run_rank": run.lora_rank,
                "run_base": run.base_model,
                "run_last_sampler": run.last_sampler_checkpoint.tinker_path if run.last_sampler_checkpoint else None,
                "checkpoints": [[c.checkpoint_type, c.tinker_path] for c in checkpoints.checkpoints],
            }
        )
    )


if __name__ == "__main__":
    main()
