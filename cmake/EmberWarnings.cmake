# ember_set_warnings(target): the project's warning set, applied to every Ember target.
function(ember_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(EMBER_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
