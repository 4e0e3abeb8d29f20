// The tensor wire format: round trips of every supported dtype and shape, and every malformed
// message rejected with InvalidArgument naming the field.
#include "rpc/wire.h"

#include <gtest/gtest.h>

#include "error_text.h"
#include "gradwire/common/error.h"

namespace gradwire::rpc {
namespace {

using testing::contains;
using testing::invalid_argument_message;

TEST(Wire, FloatMatrixRoundTripsBitForBit) {
  const at::Tensor rows = at::randn({5, 3});
  const v1::Tensor message = encode_tensor(rows);
  EXPECT_EQ(message.dtype(), v1::FLOAT32);
  ASSERT_EQ(message.shape_size(), 2);
  EXPECT_EQ(message.shape(0), 5);
  EXPECT_EQ(message.shape(1), 3);
  EXPECT_EQ(message.data().size(), 5u * 3u * 4u);
  const at::Tensor back = decode_tensor(message, "rows", {at::kFloat, 2});
  EXPECT_TRUE(at::equal(back, rows));
}

// expect.in_place: aligned float32 bytes are viewed where the message holds them; 16-bit floats
// are widened into a new tensor as usual.
TEST(Wire, InPlaceDecodingViewsTheMessagesAlignedBytes) {
  const at::Tensor rows = at::randn({6, 4});
  const v1::Tensor message = encode_tensor(rows);
  TensorExpectation expect{at::kFloat, 2};
  expect.in_place = true;
  const at::Tensor view = decode_tensor(message, "rows", expect);
  EXPECT_EQ(view.data_ptr(), static_cast<const void*>(message.data().data()));
  EXPECT_TRUE(at::equal(view, rows));
  EXPECT_NE(decode_tensor(message, "rows", {at::kFloat, 2}).data_ptr(), view.data_ptr())
      << "a copy without in_place";

  const v1::Tensor half = encode_tensor(rows.to(at::kHalf));
  const at::Tensor widened = decode_tensor(half, "rows", expect);
  EXPECT_EQ(widened.scalar_type(), at::kFloat);
  EXPECT_NE(widened.data_ptr(), static_cast<const void*>(half.data().data()));
}

// tensor_in_message: values written into the view are the message's, as encode_tensor writes them.
TEST(Wire, ATensorFilledInAMessageDecodesAsEncoded) {
  const at::Tensor rows = at::randn({3, 5});
  v1::Tensor message;
  at::Tensor view = tensor_in_message(&message, {3, 5}, at::kFloat, "rows");
  view.copy_(rows);
  EXPECT_EQ(message.SerializeAsString(), encode_tensor(rows).SerializeAsString());
  EXPECT_FALSE(invalid_argument_message([&] {
                 tensor_in_message(&message, {2}, at::kInt, "rows");
               }).empty());
}

TEST(Wire, SixteenBitFloatsTakeTwoBytesAndArriveAsFloat32) {
  const at::Tensor rows = at::randn({4, 3});
  for (const at::ScalarType type : {at::kHalf, at::kBFloat16}) {
    const v1::Tensor message = encode_tensor(rows.to(type), "rows");
    EXPECT_EQ(message.dtype(), type == at::kHalf ? v1::FLOAT16 : v1::BFLOAT16);
    EXPECT_EQ(message.data().size(), 4u * 3u * 2u);
    const at::Tensor back = decode_tensor(message, "rows", {at::kFloat, 2});
    EXPECT_EQ(back.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(back, rows.to(type).to(at::kFloat)));
    EXPECT_TRUE(contains(invalid_argument_message([&] {
                           decode_tensor(message, "ids", {at::kLong, 2});
                         }),
                         "expected int64"));
  }
}

TEST(Wire, Int64VectorRoundTripsIncludingExtremes) {
  const at::Tensor ids = at::tensor(std::vector<int64_t>{0, -1, INT64_MAX, INT64_MIN, 42});
  const at::Tensor back = decode_tensor(encode_tensor(ids), "ids", {at::kLong, 1});
  EXPECT_EQ(back.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(back, ids));
}

TEST(Wire, BytesAreLittleEndianRowMajor) {
  const v1::Tensor message = encode_tensor(at::tensor(std::vector<int64_t>{1, 258}));
  const std::string expected("\x01\0\0\0\0\0\0\0\x02\x01\0\0\0\0\0\0", 16);
  EXPECT_EQ(message.data(), expected);
}

TEST(Wire, NonContiguousTensorIsEncodedInLogicalOrder) {
  const at::Tensor base = at::arange(6, at::kFloat).reshape({2, 3});
  const at::Tensor transposed = base.t();
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_TRUE(at::equal(decode_tensor(encode_tensor(transposed), "t"), transposed));
}

TEST(Wire, EmptyAndScalarTensorsRoundTrip) {
  const at::Tensor empty = at::empty({0, 7});
  const at::Tensor back = decode_tensor(encode_tensor(empty), "empty", {at::kFloat, 2});
  EXPECT_EQ(back.sizes(), empty.sizes());
  const at::Tensor scalar = at::scalar_tensor(3.5);
  EXPECT_TRUE(
      at::equal(decode_tensor(encode_tensor(scalar.to(at::kFloat)), "s"), scalar.to(at::kFloat)));
}

TEST(Wire, EncodingOtherDtypesIsRejected) {
  const std::string message =
      invalid_argument_message([] { encode_tensor(at::zeros({2}, at::kDouble), "grads"); });
  EXPECT_TRUE(contains(message, "grads")) << message;
  EXPECT_TRUE(contains(message, "Double")) << message;
}

TEST(Wire, UnspecifiedAndUnknownDtypesAreRejected) {
  v1::Tensor message = encode_tensor(at::zeros({2}));
  message.set_dtype(v1::DTYPE_UNSPECIFIED);
  std::string text = invalid_argument_message([&] { decode_tensor(message, "lookup.ids"); });
  EXPECT_TRUE(contains(text, "lookup.ids")) << text;
  EXPECT_TRUE(contains(text, "unspecified")) << text;
  message.set_dtype(static_cast<v1::DType>(7));
  text = invalid_argument_message([&] { decode_tensor(message, "lookup.ids"); });
  EXPECT_TRUE(contains(text, "unknown(7)")) << text;
}

TEST(Wire, WrongDtypeForTheFieldIsRejected) {
  const v1::Tensor message = encode_tensor(at::zeros({3}));
  const std::string text = invalid_argument_message([&] {
    decode_tensor(message, "push.ids", {at::kLong, 1});
  });
  EXPECT_TRUE(contains(text, "push.ids")) << text;
  EXPECT_TRUE(contains(text, "float32")) << text;
  EXPECT_TRUE(contains(text, "int64")) << text;
}

TEST(Wire, WrongRankIsRejected) {
  const v1::Tensor message = encode_tensor(at::zeros({3, 2}, at::kLong));
  const std::string text = invalid_argument_message([&] {
    decode_tensor(message, "push.ids", {at::kLong, 1});
  });
  EXPECT_TRUE(contains(text, "[3, 2]")) << text;
}

TEST(Wire, ByteLengthMustMatchTheShapeExactly) {
  v1::Tensor message = encode_tensor(at::zeros({4}, at::kLong));
  message.mutable_data()->pop_back();
  std::string text = invalid_argument_message([&] { decode_tensor(message, "ids"); });
  EXPECT_TRUE(contains(text, "31 data bytes")) << text;
  EXPECT_TRUE(contains(text, "expected 32")) << text;
  message.mutable_data()->append(9, 'x');
  text = invalid_argument_message([&] { decode_tensor(message, "ids"); });
  EXPECT_TRUE(contains(text, "40 data bytes")) << text;
}

TEST(Wire, NegativeDimensionIsRejected) {
  v1::Tensor message = encode_tensor(at::zeros({2, 2}));
  message.set_shape(1, -2);
  const std::string text = invalid_argument_message([&] { decode_tensor(message, "grads"); });
  EXPECT_TRUE(contains(text, "negative dimension -2")) << text;
}

TEST(Wire, HugeShapesAreRejectedWithoutOverflow) {
  v1::Tensor message;
  message.set_dtype(v1::FLOAT32);
  // 2^32 * 2^32 wraps to 0 in 64 bits; it must not pass as an empty tensor.
  message.add_shape(int64_t{1} << 32);
  message.add_shape(int64_t{1} << 32);
  std::string text = invalid_argument_message([&] { decode_tensor(message, "grads"); });
  EXPECT_TRUE(contains(text, "more than")) << text;
  message.clear_shape();
  message.add_shape(INT64_MAX);
  message.add_shape(2);
  text = invalid_argument_message([&] { decode_tensor(message, "grads"); });
  EXPECT_TRUE(contains(text, "more than")) << text;
}

TEST(Wire, ElementBoundIsTheCallersToChoose) {
  const v1::Tensor message = encode_tensor(at::zeros({10}));
  TensorExpectation expect;
  expect.max_elements = 9;
  EXPECT_THROW(decode_tensor(message, "rows", expect), InvalidArgument);
  expect.max_elements = 10;
  EXPECT_NO_THROW(decode_tensor(message, "rows", expect));
}

TEST(Wire, TooManyDimensionsAreRejected) {
  v1::Tensor message;
  message.set_dtype(v1::INT64);
  for (int i = 0; i < kMaxWireRank + 1; ++i) message.add_shape(1);
  message.set_data(std::string(8, '\0'));
  EXPECT_THROW(decode_tensor(message, "ids"), InvalidArgument);
}

TEST(Wire, ZeroDimensionWithDataIsRejected) {
  v1::Tensor message = encode_tensor(at::zeros({0, 3}));
  message.set_data(std::string(4, '\0'));
  EXPECT_THROW(decode_tensor(message, "grads"), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::rpc
