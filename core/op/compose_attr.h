// FSetInputVarAttrOnCompose (MXNet's name): the attributes an input variable gets when
// Symbol composition creates it implicitly, e.g. PReLU's gamma carries its default
// initializer in "__init__". Kept out of registry.h so that only its users see it.
#pragma once

#include <functional>

#include "core/op/registry.h"

namespace weft {

using FSetInputVarAttrOnCompose = std::function<void(const NodeAttrs& attrs, int index, KwArgs* var_dict)>;

}  // namespace weft
