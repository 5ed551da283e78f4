"""The aclnn C API as data: aclDataType (dtypes), a call and its outcome (call), a tensor view's flat element ranges (views)."""
