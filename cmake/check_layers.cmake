# The dependency rules between anelm's libraries, checked on every build (and by the test suite):
#   cmake -DROOT=<repository> -P cmake/check_layers.cmake
# Fails listing every forbidden #include "..." line. Folders are libraries with one-way arrows:
#   tools -> server -> engine, tokenizer, chat, jinja, grammar;  only engine/ane/ -> ane_bridge.
cmake_minimum_required(VERSION 3.22)
if(NOT ROOT)
  get_filename_component(ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
endif()

# FOLDER|FORBIDDEN-PREFIX|... : a file under FOLDER may not include a header whose path starts with a
# forbidden prefix. Checked in order; a file matches every rule whose folder contains it.
set(rules
  "engine/kernels/|engine/|server/|tools/|tokenizer/|ane_bridge/|chat/|jinja/|grammar/"
  "engine/|server/|tools/|tokenizer/|ane_bridge/|chat/|jinja/|grammar/"
  "tokenizer/|engine/|server/|tools/|ane_bridge/|chat/|jinja/|grammar/"
  "ane_bridge/|engine/|server/|tools/|tokenizer/|chat/|jinja/|grammar/"
  "jinja/|engine/|server/|tools/|tokenizer/|ane_bridge/|chat/|grammar/"
  "grammar/|engine/|server/|tools/|tokenizer/|ane_bridge/|chat/|jinja/"
  "chat/|engine/|server/|tools/|tokenizer/|ane_bridge/"
  "server/|tools/|ane_bridge/|engine/kernels/|engine/ane/"
  "tools/|ane_bridge/")
# Exceptions inside a folder that a rule above forbids: engine/kernels/ may include itself, and the
# ANE executor is the one includer of ane_bridge.
set(allowed "engine/kernels/:engine/kernels/" "engine/ane/:ane_bridge/")
# JSON stays out of the engine except in its file-format readers.
set(json_ok engine/config_hf.cpp engine/safetensors.cpp)

set(problems "")
foreach(folder engine tokenizer ane_bridge server tools chat jinja grammar)
  file(GLOB_RECURSE files "${ROOT}/${folder}/*.h" "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.mm")
  foreach(path ${files})
    file(RELATIVE_PATH rel "${ROOT}" "${path}")
    file(STRINGS "${path}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line ${includes})
      if(line MATCHES "nlohmann/json" AND rel MATCHES "^engine/" AND NOT rel IN_LIST json_ok)
        string(APPEND problems "\n  ${rel}: ${line}  (JSON belongs to the server or the engine's file readers)")
      endif()
      if(NOT line MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
        continue()
      endif()
      set(target "${CMAKE_MATCH_1}")
      foreach(rule ${rules})
        string(REPLACE "|" ";" parts "${rule}")
        list(GET parts 0 scope)
        list(REMOVE_AT parts 0)
        string(FIND "${rel}" "${scope}" at)
        if(NOT at EQUAL 0)
          continue()
        endif()
        foreach(bad ${parts})
          string(FIND "${target}" "${bad}" hit)
          if(NOT hit EQUAL 0)
            continue()
          endif()
          set(excused OFF)
          foreach(a ${allowed})
            string(REPLACE ":" ";" ap "${a}")
            list(GET ap 0 a_scope)
            list(GET ap 1 a_target)
            string(FIND "${rel}" "${a_scope}" s1)
            string(FIND "${target}" "${a_target}" s2)
            if(s1 EQUAL 0 AND s2 EQUAL 0)
              set(excused ON)
            endif()
          endforeach()
          # A folder may always include its own headers (engine/ rules forbid engine/ only for kernels).
          string(FIND "${target}" "${scope}" own)
          if(own EQUAL 0 AND NOT scope STREQUAL "engine/kernels/")
            set(excused ON)
          endif()
          if(NOT excused)
            string(APPEND problems "\n  ${rel}: #include \"${target}\"  (${scope} may not include ${bad})")
          endif()
        endforeach()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "forbidden includes (see cmake/check_layers.cmake for the rules):${problems}")
endif()
