"""tests/frameworks/models.py: small Hugging Face models built from configs (no weights are
downloaded: GPT-2, Llama, Qwen2, GPT-NeoX, BERT) and samples/torch/train.py's chain model, and their layers as a stagepart profile
names them: each module by its fully qualified name, in call order, the loss as a layer of its
own.

The same seed gives the same weights in every process, so the pipelined ranks and the unpipelined
reference start from one model."""
import os
import sys

import torch


# a small vocabulary puts GPT-2's default bos/eos ids out of range: no special tokens
NO_TOKENS = {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def gpt2(n_layer=4, vocab=512, d=64, seq=32, seed=0):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(**NO_TOKENS, n_layer=n_layer, n_embd=d, n_head=4, vocab_size=vocab, n_positions=seq,
                            tie_word_embeddings=False, use_cache=False, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(cfg)
    names = ["transformer.wte", "transformer.wpe"] + [f"transformer.h.{i}" for i in range(n_layer)]
    names += ["transformer.ln_f", "lm_head", "loss"]
    kinds = ["embedding", "embedding"] + ["transformer"] * n_layer + ["norm", "head", "loss"]
    return model, names, kinds, cfg.vocab_size


def _decoder(config_cls, model_cls, n_layer, vocab, d, seed, **extra):
    """A Llama-style decoder (embed_tokens, layers.N, norm, lm_head under `model`)."""
    cfg = config_cls(**NO_TOKENS, num_hidden_layers=n_layer, hidden_size=d, intermediate_size=2 * d,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=vocab,
                     use_cache=False, tie_word_embeddings=False, attention_dropout=0.0, **extra)
    torch.manual_seed(seed)
    model = model_cls(cfg)
    names = ["model.embed_tokens"] + [f"model.layers.{i}" for i in range(n_layer)]
    names += ["model.norm", "lm_head", "loss"]
    kinds = ["embedding"] + ["transformer"] * n_layer + ["norm", "head", "loss"]
    return model, names, kinds, cfg.vocab_size


def llama(n_layer=4, vocab=512, d=64, seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM
    return _decoder(LlamaConfig, LlamaForCausalLM, n_layer, vocab, d, seed)


def qwen2(n_layer=4, vocab=512, d=64, seed=0):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return _decoder(Qwen2Config, Qwen2ForCausalLM, n_layer, vocab, d, seed)


def neox(n_layer=4, vocab=512, d=64, seed=0):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    cfg = GPTNeoXConfig(**NO_TOKENS, num_hidden_layers=n_layer, hidden_size=d,
                        intermediate_size=2 * d, num_attention_heads=4, vocab_size=vocab,
                        use_cache=False, tie_word_embeddings=False, attention_dropout=0.0,
                        hidden_dropout=0.0)
    torch.manual_seed(seed)
    model = GPTNeoXForCausalLM(cfg)
    names = ["gpt_neox.embed_in"] + [f"gpt_neox.layers.{i}" for i in range(n_layer)]
    names += ["gpt_neox.final_layer_norm", "lm_head", "loss"]  # "embed_out" before transformers 5
    kinds = ["embedding"] + ["transformer"] * n_layer + ["norm", "head", "loss"]
    return model, names, kinds, cfg.vocab_size


def bert(n_layer=4, vocab=512, d=64, seed=0):
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(**NO_TOKENS, num_hidden_layers=n_layer, hidden_size=d, intermediate_size=2 * d,
                     num_attention_heads=4, vocab_size=vocab, max_position_embeddings=64,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(seed)
    model = BertForMaskedLM(cfg)
    names = ["bert.embeddings"] + [f"bert.encoder.layer.{i}" for i in range(n_layer)]
    names += ["cls", "loss"]  # the MLM head, one unit: dense, activation, norm, decoder
    kinds = ["embedding"] + ["transformer"] * n_layer + ["head", "loss"]
    return model, names, kinds, cfg.vocab_size


# samples/torch/train.py's model: each layer takes only the previous one's output, which torch's
# multi-stage schedules need (Hugging Face models pass the attention mask and position data from
# the first stage to every later one, which PipelineScheduleMulti refuses as skip connections)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "samples", "torch"))
from train import Block, Model  # noqa: E402,F401  (Block: DeepSpeed's layer specs)


def chain(n_layer=6, vocab=512, d=64, seed=0):
    torch.manual_seed(seed)
    model = Model(vocab, d, n_layer)
    names = ["embedding"] + [f"layers.{i}" for i in range(n_layer)] + ["head", "loss"]
    kinds = ["embedding"] + ["transformer"] * n_layer + ["head", "loss"]
    return model, names, kinds, vocab


BUILDERS = {"gpt2": gpt2, "llama": llama, "qwen2": qwen2, "neox": neox, "bert": bert,
            "chain": chain}


def build(spec):
    """spec: {"model": one of BUILDERS, "n_layer": .., "vocab": .., "d": ..}."""
    kw = {k: v for k, v in spec.items() if k != "model"}
    return BUILDERS[spec["model"]](**kw)


def logits_of(out):
    """The logits from what a model or its last pipeline stage returns (a Hugging Face output
    object, a tuple whose first item is the logits, or the tensor itself)."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if isinstance(out, dict):
        return out["logits"]
    return out[0]


def loss_fn(out, target):
    logits = logits_of(out)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), target.flatten())
