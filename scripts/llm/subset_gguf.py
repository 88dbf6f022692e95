#!/usr/bin/env python3
# Write a GGUF with the first N transformer blocks of a Llama-family GGUF (same tokenizer and
# metadata, block_count changed): a smaller file of the same layer shapes for speed tests.
import sys
import numpy as np
import gguf
from gguf import GGUFReader, GGUFWriter, GGUFValueType

src, dst, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
reader = GGUFReader(src)
arch = reader.fields["general.architecture"]
arch = bytes(arch.parts[arch.data[0]]).decode()
writer = GGUFWriter(dst, arch)
for name, field in reader.fields.items():
    if name.startswith("GGUF.") or name == "general.architecture":
        continue
    vtype = field.types[0]
    if name == f"{arch}.block_count":
        writer.add_uint32(name, keep)
        continue
    if vtype == GGUFValueType.ARRAY:
        itype = field.types[1]
        if itype == GGUFValueType.STRING:
            values = [bytes(field.parts[i]).decode("utf-8", errors="surrogateescape") for i in field.data]
        else:
            values = [field.parts[i].tolist()[0] for i in field.data]
        writer.add_array(name, values)
    elif vtype == GGUFValueType.STRING:
        writer.add_string(name, bytes(field.parts[field.data[0]]).decode("utf-8"))
    else:
        writer.add_key_value(name, field.parts[field.data[0]].tolist()[0], vtype)
for tensor in reader.tensors:
    if tensor.name.startswith("blk."):
        if int(tensor.name.split(".")[1]) >= keep:
            continue
    shape = [int(x) for x in reversed(tensor.shape.tolist())]
    writer.add_tensor(tensor.name, np.asarray(tensor.data), raw_shape=tensor.data.shape if tensor.tensor_type not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16) else None, raw_dtype=tensor.tensor_type)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
