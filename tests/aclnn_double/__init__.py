"""The aclnn TEST DOUBLE (C sources), its build helper and call builders for the tests."""
