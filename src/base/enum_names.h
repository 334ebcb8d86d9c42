// Stable names for enum values, as logs, JSON and --help show them: one
// table per enum instead of one switch per enum.
#pragma once

#include <cstddef>
#include <string_view>

namespace agent_init {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

/// The name of `value` in `names`; the first entry's when it is missing.
template <class E, size_t N>
constexpr std::string_view NameOf(E value, const EnumName<E> (&names)[N]) {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return names[0].name;
}

}  // namespace agent_init
