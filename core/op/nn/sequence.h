// The parameters of SequenceMask, SequenceLast and SequenceReverse, shared by their CPU
// (sequence.cc) and GPU (sequence_gpu.cu) code.
#pragma once

namespace weft {
namespace op {

struct SequenceMaskParam {
  bool use_sequence_length = false;
  double value = 0;
  int axis = 0;
};

struct SequenceLastParam {
  bool use_sequence_length = false;
  int axis = 0;
};

struct SequenceReverseParam {
  bool use_sequence_length = false;
  int axis = 0;
};

}  // namespace op
}  // namespace weft
