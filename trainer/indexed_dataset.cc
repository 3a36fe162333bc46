#include "trainer/indexed_dataset.h"

#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace shard::trainer {

std::vector<int64_t> CheckedIndices(c10::ArrayRef<size_t> indices,
                                    uint64_t size, const char* what) {
  std::vector<int64_t> checked(indices.begin(), indices.end());
  for (size_t index : indices) {
    if (index >= size) {
      throw std::out_of_range(
          absl::StrCat(what, " ", index, " of a dataset of ", size));
    }
  }
  return checked;
}

}  // namespace shard::trainer
