"""Building and running reference Hugging Face ALBERT models (PyTorch, CPU) for tests."""

import torch
import transformers

from keras_albert import AlbertConfig

ATOL = 1e-5

TINY_HF = dict(
    vocab_size=97,
    embedding_size=8,
    hidden_size=24,
    num_hidden_layers=4,
    num_attention_heads=3,
    intermediate_size=40,
    max_position_embeddings=64,
)
CONFIGS = {
    "groups_and_inner_repetitions": dict(TINY_HF, num_hidden_groups=2, inner_group_num=2),
    "gelu_new": dict(TINY_HF, hidden_act="gelu_new"),
    "exact_gelu": dict(TINY_HF, hidden_act="gelu"),
    "relu": dict(TINY_HF, hidden_act="relu"),
    "uneven_groups": dict(TINY_HF, num_hidden_layers=6, num_hidden_groups=3, inner_group_num=3),
}


def hf_model(cls, values: dict, seed: int = 0, scale: float = 0.1):
    """An HF model whose every parameter is random: N(0, scale²), plus one where HF puts 1."""
    torch.manual_seed(seed)
    model = cls(transformers.AlbertConfig(**values, attn_implementation="eager"))
    # Random LayerNorm parameters and biases too, so that a swapped beta/gamma shows.
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn_like(parameter) * scale + (parameter == 1.0).float())
    return model.eval()


def state_dict_numpy(model) -> dict:
    return {name: tensor.detach().numpy() for name, tensor in model.state_dict().items()}


def hf_forward(model, inputs: dict, **extra):
    with torch.no_grad():
        return model(
            input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
            **extra,
        )


def config_from_hf(values: dict) -> AlbertConfig:
    return AlbertConfig.from_hf_config(transformers.AlbertConfig(**values).to_dict())
