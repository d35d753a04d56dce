# Semantic analysis: AST -> checked, specialized Tile IR (frontend/Sema*.cpp).
add_library(kiln_sema STATIC
  Autotune.cpp
  ConstEval.cpp
  EarlyReturn.cpp
  Imports.cpp
  Sema.cpp
  BuiltinSynonyms.cpp
  SemaTileOps.cpp
  SemaTupleCombine.cpp
  SemaSparsity.cpp
  SemaBuiltinsHints.cpp
  SemaBuiltins.cpp
  SemaBuiltinsRandom.cpp
  SemaBuiltinsDerived.cpp
  SemaBuiltinsReduce.cpp
  SemaBuiltinsShape.cpp
  SemaCall.cpp
  SemaExpr.cpp
  SemaGraph.cpp
  SemaKernel.cpp
  SemaStmt.cpp
  SemaValues.cpp
  TypeRules.cpp
)
kiln_target_defaults(kiln_sema)
target_link_libraries(kiln_sema PUBLIC kiln_syntax kiln_ir)
