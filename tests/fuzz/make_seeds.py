#!/usr/bin/env python3
"""Writes small synthetic seeds the shared models lack: a tiny GGUF (llama, SPM vocab, tensors) and
safetensors files / shard indexes. Usage: make_seeds.py GGUF_DIR SAFETENSORS_DIR"""
import json
import struct
import sys
from pathlib import Path


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, vtype, payload):
    return gguf_str(key) + struct.pack("<I", vtype) + payload


def gguf_array(etype, items, pack):
    return struct.pack("<IQ", etype, len(items)) + b"".join(pack(x) for x in items)


def tiny_gguf(arch, model):
    tokens = ["<unk>", "<s>", "</s>", "\u2581a", "b", "\u2581", "<0x41>", "ab", "<|im_end|>", "\u0120the"]
    kv = [
        gguf_kv("general.architecture", 8, gguf_str(arch)),
        gguf_kv("general.name", 8, gguf_str("tiny")),
        gguf_kv(arch + ".block_count", 4, struct.pack("<I", 1)),
        gguf_kv(arch + ".embedding_length", 4, struct.pack("<I", 8)),
        gguf_kv(arch + ".feed_forward_length", 4, struct.pack("<I", 16)),
        gguf_kv(arch + ".attention.head_count", 4, struct.pack("<I", 2)),
        gguf_kv(arch + ".attention.head_count_kv", 4, struct.pack("<I", 1)),
        gguf_kv(arch + ".context_length", 4, struct.pack("<I", 64)),
        gguf_kv(arch + ".attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5)),
        gguf_kv(arch + ".rope.freq_base", 6, struct.pack("<f", 10000.0)),
        gguf_kv("tokenizer.ggml.model", 8, gguf_str(model)),
        gguf_kv("tokenizer.ggml.tokens", 9, gguf_array(8, tokens, gguf_str)),
        gguf_kv("tokenizer.ggml.scores", 9, gguf_array(6, [float(-i) for i in range(len(tokens))],
                                                       lambda x: struct.pack("<f", x))),
        gguf_kv("tokenizer.ggml.token_type", 9, gguf_array(5, [2, 3, 3, 1, 1, 1, 6, 1, 3, 1],
                                                           lambda x: struct.pack("<i", x))),
        gguf_kv("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 1)),
        gguf_kv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2)),
        gguf_kv("tokenizer.ggml.add_bos_token", 7, b"\x01"),
        gguf_kv("tokenizer.chat_template", 8, gguf_str("{% for m in messages %}{{ m.content }}{% endfor %}")),
    ]
    if model == "gpt2":
        kv.append(gguf_kv("tokenizer.ggml.pre", 8, gguf_str("qwen2")))
        kv.append(gguf_kv("tokenizer.ggml.merges", 9, gguf_array(8, ["a b", "\u0120 t", "\u0120t h"], gguf_str)))
    # name, ne (GGUF order), ggml type (0 f32, 1 f16, 8 q8_0), bytes
    tensors = [("token_embd.weight", [8, 10], 0, 320), ("output_norm.weight", [8], 0, 32),
               ("blk.0.attn_q.weight", [32, 8], 8, 272), ("blk.0.ffn_up.weight", [8, 16], 1, 256)]
    infos, data, off = b"", b"", 0
    for name, ne, t, nbytes in tensors:
        infos += gguf_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", t, off)
        chunk = bytes((i * 7 + off) % 251 for i in range(nbytes))
        chunk += b"\0" * (-len(chunk) % 32)
        data += chunk
        off += len(chunk)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)) + b"".join(kv) + infos
    head += b"\0" * (-len(head) % 32)
    return head + data


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, size in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + size]}
        data += bytes(i % 256 for i in range(size))
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    gguf_dir, st_dir = Path(sys.argv[1]), Path(sys.argv[2])
    gguf_dir.mkdir(parents=True, exist_ok=True)
    st_dir.mkdir(parents=True, exist_ok=True)
    (gguf_dir / "tiny-llama-spm.gguf").write_bytes(tiny_gguf("llama", "llama"))
    (gguf_dir / "tiny-qwen2-bpe.gguf").write_bytes(tiny_gguf("qwen2", "gpt2"))
    (st_dir / "tiny.safetensors").write_bytes(safetensors(
        [("model.embed_tokens.weight", "F32", [4, 2], 32), ("model.norm.weight", "BF16", [2], 4),
         ("ids", "I64", [2], 16), ("f8", "F8_E4M3", [3], 3)], {"format": "pt", "n": "1"}))
    (st_dir / "empty-tensor.safetensors").write_bytes(safetensors([("e", "F16", [0, 4], 0)]))
    (st_dir / "index.json").write_text(json.dumps(
        {"metadata": {"total_size": 8}, "weight_map": {"t0": "model-00001-of-00001.safetensors"}}))
    (st_dir / "config-llama3.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
         "head_dim": 16, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
         "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
         "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": [2, 3]}))
    (st_dir / "config-qwen3.json").write_text(json.dumps(
        {"architectures": ["Qwen3ForCausalLM"], "hidden_size": 32, "num_hidden_layers": 1,
         "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 64, "vocab_size": 50,
         "head_dim": 16, "attention_bias": False, "eos_token_id": 4}))


if __name__ == "__main__":
    main()
