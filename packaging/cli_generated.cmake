# Writes what `myelin` generates from its one command-line description (app/cli/cli_spec.cpp) into
# a file: the man page (--generate-man) or the bash completion (--generate-bash-completion). Run
# at build time after myelin is linked, so neither can drift from the options it parses; a
# failed run leaves no file behind.
#   cmake -DPROGRAM=<exe> -DARGUMENT=<option> -DOUTPUT=<file> -P cli_generated.cmake
execute_process(COMMAND ${PROGRAM} ${ARGUMENT} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARGUMENT} failed (${rc})")
endif()
file(WRITE ${OUTPUT} "${text}")
