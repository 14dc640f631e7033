/**
 * The text the model maker learns its BPE merges from. Original prose, chat turns, code and
 * JSON, so the merges cover the shapes of text the service sees. Changing it changes every
 * made tokenizer: keep it stable.
 */
export const CORPUS = `The train left the station at seven in the morning, and the yard was already busy.
Workers moved between the tracks, checking the wheels, the brakes and the couplings of every car.
A small model can learn a great deal from a few examples, if the examples are chosen with care.
The quick brown fox jumps over the lazy dog. The lazy dog does not mind; it is used to foxes.
Training a language model means showing it text and asking it to predict the next token.
Each token is a piece of a word: common words are one token, rare words are split into several.
When the model is served, it reads a prompt, computes the logits of the next token, and samples one.
Sampling with a temperature of zero always picks the most likely token; higher temperatures explore.
The attention layers let every position look back at the positions before it.
Keys and values of earlier tokens are kept in a cache, so each new token costs only one step.
<|im_start|>system
You are a helpful assistant. Answer briefly and accurately.<|im_end|>
<|im_start|>user
What is the capital of France?<|im_end|>
<|im_start|>assistant
The capital of France is Paris.<|im_end|>
<|im_start|>user
Can you write a function that adds two numbers?<|im_end|>
<|im_start|>assistant
Here is a function that adds two numbers:

function add(a, b) {
  return a + b;
}

const total = add(2, 3); // 5
console.log("The total is", total);<|im_end|>
<|im_start|>user
What is the weather like in Berlin today?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Berlin", "unit": "celsius"}}
</tool_call><|im_end|>
<|im_start|>tool
{"temperature": 21, "condition": "sunny", "humidity": 40}<|im_end|>
<|im_start|>assistant
It is sunny in Berlin today, with a temperature of 21 degrees and a humidity of 40 percent.<|im_end|>
{"id": 1, "name": "Alice", "email": "alice@example.com", "active": true, "roles": ["admin", "user"]}
{"id": 2, "name": "Bob", "email": "bob@example.com", "active": false, "roles": ["user"]}
{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}
def train(model, data, epochs=3, learning_rate=0.001):
    for epoch in range(epochs):
        for batch in data:
            loss = model.loss(batch)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss:.4f}")
    return model

Numbers appear everywhere: 0 1 2 3 4 5 6 7 8 9 10 12 15 20 25 50 100 128 256 512 1024 2024 3.14 0.5 99%.
The reward of a trajectory says how good an answer was; the advantage says how much better than average.
Questions and answers, stories and lists, code and data: a tokenizer should handle them all.
First, read the question. Second, think about what is asked. Third, write the answer, and stop.
Yes. No. Maybe. Thank you! Please wait... Done? Of course: it works, and it is fast.
Il fait beau aujourd'hui. Das Wetter ist schön. El tren llega a las ocho. 今日は良い天気です。
`;
