/**
 * The SDK's protobuf package `tinker_public`, as protobufjs JSON: decoded from the serialized
 * FileDescriptorProto in thinking-machines-lab/tinker 0.25.0 (commit d595dc2),
 * src/tinker/proto/tinker_public_pb2.py, with protobufjs/ext/descriptor (Root.fromDescriptor,
 * then toJSON). Field numbers and types are the SDK's; do not edit by hand.
 */
export const TINKER_PUBLIC_DESCRIPTOR = {
  "nested": {
    "tinker_public": {
      "nested": {
        "SampleResponse": {
          "oneofs": {
            "_prompt_logprobs": {
              "oneof": [
                "prompt_logprobs"
              ]
            },
            "_topk_prompt_logprobs": {
              "oneof": [
                "topk_prompt_logprobs"
              ]
            }
          },
          "fields": {
            "sequences": {
              "rule": "repeated",
              "type": ".tinker_public.SampledSequence",
              "id": 1
            },
            "prompt_logprobs": {
              "type": "bytes",
              "id": 2,
              "options": {
                "proto3_optional": true
              }
            },
            "topk_prompt_logprobs": {
              "type": ".tinker_public.TopkPromptLogprobs",
              "id": 3,
              "options": {
                "proto3_optional": true
              }
            },
            "prompt_cache_hit_tokens": {
              "type": "int32",
              "id": 4
            }
          }
        },
        "SampledSequence": {
          "oneofs": {
            "_logprobs": {
              "oneof": [
                "logprobs"
              ]
            }
          },
          "fields": {
            "stop_reason": {
              "type": ".tinker_public.StopReason",
              "id": 1
            },
            "tokens": {
              "type": "bytes",
              "id": 2
            },
            "logprobs": {
              "type": "bytes",
              "id": 3,
              "options": {
                "proto3_optional": true
              }
            }
          }
        },
        "TopkPromptLogprobs": {
          "fields": {
            "token_ids": {
              "type": "bytes",
              "id": 1
            },
            "logprobs": {
              "type": "bytes",
              "id": 2
            },
            "k": {
              "type": "uint32",
              "id": 3
            },
            "prompt_length": {
              "type": "uint32",
              "id": 4
            }
          }
        },
        "SparseCsr": {
          "fields": {
            "values": {
              "type": "bytes",
              "id": 1
            },
            "crow_indices": {
              "type": "bytes",
              "id": 2
            },
            "col_indices": {
              "type": "bytes",
              "id": 3
            }
          }
        },
        "Tensor": {
          "oneofs": {
            "encoding": {
              "oneof": [
                "dense",
                "sparse_csr"
              ]
            }
          },
          "fields": {
            "dense": {
              "type": "bytes",
              "id": 1
            },
            "sparse_csr": {
              "type": ".tinker_public.SparseCsr",
              "id": 2
            },
            "dtype": {
              "type": ".tinker_public.DType",
              "id": 3
            },
            "shape": {
              "rule": "repeated",
              "type": "int64",
              "id": 4
            }
          }
        },
        "BatchedTensor": {
          "fields": {
            "data": {
              "type": "bytes",
              "id": 1
            },
            "offsets": {
              "type": "bytes",
              "id": 2
            },
            "dtype": {
              "type": ".tinker_public.DType",
              "id": 3
            },
            "trailing_shape": {
              "rule": "repeated",
              "type": "int64",
              "id": 4
            }
          }
        },
        "ArrayRecord": {
          "fields": {
            "type_tag": {
              "type": "string",
              "id": 1
            },
            "fields": {
              "keyType": "string",
              "type": ".tinker_public.BatchedTensor",
              "id": 2
            },
            "num_datums": {
              "type": "int64",
              "id": 3
            }
          }
        },
        "ForwardBackwardOutput": {
          "fields": {
            "loss_fn_output_type": {
              "type": "string",
              "id": 1
            },
            "loss_fn_outputs": {
              "rule": "repeated",
              "type": ".tinker_public.ArrayRecord",
              "id": 2
            },
            "metrics": {
              "keyType": "string",
              "type": "double",
              "id": 3
            }
          }
        },
        "ForwardBackwardRequest": {
          "fields": {
            "model_id": {
              "type": "string",
              "id": 1
            },
            "seq_id": {
              "type": "int32",
              "id": 2
            },
            "data": {
              "rule": "repeated",
              "type": ".tinker_public.Datum",
              "id": 3
            },
            "loss_fn": {
              "type": "string",
              "id": 4
            },
            "loss_fn_config": {
              "keyType": "string",
              "type": "double",
              "id": 5
            },
            "forward_only": {
              "type": "bool",
              "id": 6
            }
          }
        },
        "Datum": {
          "fields": {
            "model_input": {
              "rule": "repeated",
              "type": ".tinker_public.Chunk",
              "id": 1
            },
            "loss_fn_inputs": {
              "keyType": "string",
              "type": ".tinker_public.Tensor",
              "id": 2
            }
          }
        },
        "Chunk": {
          "oneofs": {
            "chunk": {
              "oneof": [
                "encoded_text",
                "image",
                "dmel"
              ]
            }
          },
          "fields": {
            "encoded_text": {
              "type": ".tinker_public.EncodedTextChunk",
              "id": 1
            },
            "image": {
              "type": ".tinker_public.ImageChunk",
              "id": 2
            },
            "dmel": {
              "type": ".tinker_public.DmelChunk",
              "id": 3
            }
          }
        },
        "EncodedTextChunk": {
          "fields": {
            "tokens": {
              "type": "bytes",
              "id": 1
            }
          }
        },
        "ImageChunk": {
          "oneofs": {
            "_expected_tokens": {
              "oneof": [
                "expected_tokens"
              ]
            }
          },
          "fields": {
            "data": {
              "type": "bytes",
              "id": 1
            },
            "format": {
              "type": "string",
              "id": 2
            },
            "expected_tokens": {
              "type": "int32",
              "id": 3,
              "options": {
                "proto3_optional": true
              }
            }
          }
        },
        "DmelChunk": {
          "fields": {
            "dmel": {
              "type": "bytes",
              "id": 1
            }
          }
        },
        "SamplingParams": {
          "oneofs": {
            "stop": {
              "oneof": [
                "stop_strs",
                "stop_tokens"
              ]
            },
            "_max_tokens": {
              "oneof": [
                "max_tokens"
              ]
            },
            "_seed": {
              "oneof": [
                "seed"
              ]
            },
            "_temperature": {
              "oneof": [
                "temperature"
              ]
            },
            "_top_k": {
              "oneof": [
                "top_k"
              ]
            },
            "_top_p": {
              "oneof": [
                "top_p"
              ]
            }
          },
          "fields": {
            "max_tokens": {
              "type": "int32",
              "id": 1,
              "options": {
                "proto3_optional": true
              }
            },
            "seed": {
              "type": "uint64",
              "id": 2,
              "options": {
                "proto3_optional": true
              }
            },
            "temperature": {
              "type": "float",
              "id": 3,
              "options": {
                "proto3_optional": true
              }
            },
            "top_k": {
              "type": "int32",
              "id": 4,
              "options": {
                "proto3_optional": true
              }
            },
            "top_p": {
              "type": "float",
              "id": 5,
              "options": {
                "proto3_optional": true
              }
            },
            "stop_strs": {
              "type": ".tinker_public.StopStrings",
              "id": 6
            },
            "stop_tokens": {
              "type": ".tinker_public.StopTokens",
              "id": 7
            }
          }
        },
        "StopStrings": {
          "fields": {
            "values": {
              "rule": "repeated",
              "type": "string",
              "id": 1
            }
          }
        },
        "StopTokens": {
          "fields": {
            "values": {
              "rule": "repeated",
              "type": "int32",
              "id": 1
            }
          }
        },
        "StopReason": {
          "values": {
            "STOP_REASON_STOP": 0,
            "STOP_REASON_LENGTH": 1
          }
        },
        "DType": {
          "values": {
            "DTYPE_UNSPECIFIED": 0,
            "DTYPE_FLOAT32": 1,
            "DTYPE_INT64": 2,
            "DTYPE_INT32": 3,
            "DTYPE_BFLOAT16": 4
          }
        }
      }
    }
  }
};
