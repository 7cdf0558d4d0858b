// Limits on what input from outside may claim (DESIGN.md idea 10): a file or a message
// states sizes (elements, pixels, nodes, nesting, ...) before its data, and a few hostile
// bytes must not make Weft allocate gigabytes or recurse without end before it finds out
// the claim is false. Each claim is checked against its limit before anything is
// allocated. Every limit has a default generous for real models and data sets, and an
// environment variable that raises (or lowers) it; the error names the input, the claim,
// the limit and the variable. docs/security.md lists them.
#pragma once

#include <cstdint>
#include <string>

namespace weft {

enum class Limit : int {
  kArrayElements = 0,   // elements of one array a file declares (WEFT_LIMIT_ARRAY_ELEMENTS)
  kImagePixels,         // width x height of one image to decode (WEFT_LIMIT_IMAGE_PIXELS)
  kGraphNodes,          // nodes of one symbol JSON (WEFT_LIMIT_GRAPH_NODES)
  kJsonDepth,           // nesting of JSON arrays and objects (WEFT_LIMIT_JSON_DEPTH)
  kVariadicInputs,      // inputs of one variadic operator node, e.g. Concat (WEFT_LIMIT_VARIADIC_INPUTS)
  kAttrBytes,           // bytes of one attribute value in a symbol JSON (WEFT_LIMIT_ATTR_BYTES)
  kDecompressedBytes,   // bytes a compressed file may inflate to (WEFT_LIMIT_DECOMPRESSED_BYTES)
  kRecordBytes,         // bytes of one RecordIO record (WEFT_LIMIT_RECORD_BYTES)
  kNumLimits
};

// The limit in force: the environment variable's value when set (read once), else the
// default. A malformed variable is an error naming it.
int64_t LimitValue(Limit limit);
// The environment variable of `limit` ("WEFT_LIMIT_IMAGE_PIXELS").
const char* LimitEnvName(Limit limit);
// Throws kValue when `claimed` exceeds the limit: "<where>: claims <claimed> <unit>, over the
// limit of <limit> (set <ENV> to allow more)".
void CheckLimit(Limit limit, int64_t claimed, const std::string& where);

}  // namespace weft
