# Install rules and the exported CMake package: find_package(Ember CONFIG) then
# target_link_libraries(app Ember::ember).
include(CMakePackageConfigHelpers)

install(TARGETS ${EMBER_INSTALL_TARGETS} EXPORT EmberTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ember DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT EmberTargets NAMESPACE Ember:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Ember)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/EmberConfig.cmake.in
  ${PROJECT_BINARY_DIR}/EmberConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Ember)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/EmberConfig.cmake ${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/EmberEmbed.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Ember)
