// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";
import {IAuction} from "./interfaces/IAuction.sol";
import {IProjectRegistry} from "./interfaces/IProjectRegistry.sol";
import {IProjectToken} from "./interfaces/IProjectToken.sol";
import {AdminApprovals} from "./utils/AdminApprovals.sol";

/// @title Token and auction factory: one project token and one auction per approved project.
/// @notice Tokens and auctions are EIP-1167 clones of implementations registered by auction type name.
///         The registry's admins pause and force-finish auctions; changing an implementation or the bid coin
///         needs two of them.
contract AuctionFactory is AdminApprovals {
    /// @dev Field order matches the first implementation's `projectTokens` getter, which clients read.
    struct Project {
        address proposer;
        address token;
        address auction;
        string auctionType;
    }

    struct ProjectSurface {
        address auction;
        string tokenName;
        string tokenSymbol;
        string auctionType;
        bytes32 projectHash;
    }

    IProjectRegistry public immutable registry;
    address public immutable tokenImplementation;
    /// @notice Bid coin handed to auctions created from now on.
    address public bidCoin;

    mapping(bytes32 projectHash => Project) public projectTokens;
    mapping(string auctionType => address) public implementationOf;
    string[] private _auctionTypes;

    event TokenCreation(address indexed creator, string Name, string Symbol, address indexed token);
    event CreateAuctionEvent(address indexed creator, address auction, string auctionType, bytes32 fileHash);
    event BidCoinChanged(address indexed bidCoin);
    event ImplementationChanged(string auctionType, address implementation);

    error InvalidAddress();
    error LengthMismatch();
    error DuplicateAuctionType(string auctionType);
    error UnknownAuctionType(string auctionType);
    error NotApprovedProposer(address caller, bytes32 projectHash);
    error EmptyTokenName();
    error TokenAlreadyCreated(bytes32 projectHash);
    error TokenNotCreated(bytes32 projectHash);
    error AuctionAlreadyCreated(bytes32 projectHash);
    error AuctionNotCreated(bytes32 projectHash);

    modifier onlyAdmin() {
        if (!_isAdmin(msg.sender)) revert NotAdmin(msg.sender);
        _;
    }

    modifier onlyApprovedProposer(bytes32 projectHash) {
        if (!registry.isApprovedProposer(msg.sender, projectHash)) revert NotApprovedProposer(msg.sender, projectHash);
        _;
    }

    constructor(
        IProjectRegistry registry_,
        address bidCoin_,
        address tokenImplementation_,
        string[] memory auctionTypeNames,
        address[] memory implementations
    ) {
        if (address(registry_) == address(0) || bidCoin_ == address(0) || tokenImplementation_.code.length == 0) {
            revert InvalidAddress();
        }
        if (auctionTypeNames.length != implementations.length) revert LengthMismatch();
        registry = registry_;
        bidCoin = bidCoin_;
        tokenImplementation = tokenImplementation_;
        for (uint256 i = 0; i < auctionTypeNames.length; i++) {
            string memory name = auctionTypeNames[i];
            if (implementationOf[name] != address(0)) revert DuplicateAuctionType(name);
            if (implementations[i].code.length == 0) revert InvalidAddress();
            implementationOf[name] = implementations[i];
            _auctionTypes.push(name);
        }
    }

    // ---------------------------------------------------------------- proposer actions

    /// @notice Creates the project's token; `initialSupply` goes to the proposer. The auction's supply is
    ///         minted separately when the auction is created.
    function createToken(
        bytes32 projectHash,
        string calldata tokenName,
        string calldata tokenSymbol,
        uint256 initialSupply
    ) external onlyApprovedProposer(projectHash) returns (address token) {
        Project storage project = projectTokens[projectHash];
        if (project.token != address(0)) revert TokenAlreadyCreated(projectHash);
        if (bytes(tokenName).length == 0 || bytes(tokenSymbol).length == 0) revert EmptyTokenName();
        token = Clones.clone(tokenImplementation);
        IProjectToken(token).initialize(tokenName, tokenSymbol, address(this), msg.sender, initialSupply);
        project.proposer = msg.sender;
        project.token = token;
        emit TokenCreation(msg.sender, tokenName, tokenSymbol, token);
    }

    /// @param auctionType One of `auctionTypes()`, emitted as is in `CreateAuctionEvent`.
    function createAuction(
        bytes32 projectHash,
        string calldata auctionType,
        IAuction.AuctionParams calldata params
    ) external onlyApprovedProposer(projectHash) returns (address auction) {
        Project storage project = projectTokens[projectHash];
        if (project.token == address(0)) revert TokenNotCreated(projectHash);
        if (project.auction != address(0)) revert AuctionAlreadyCreated(projectHash);
        address implementation = implementationOf[auctionType];
        if (implementation == address(0)) revert UnknownAuctionType(auctionType);

        auction = Clones.clone(implementation);
        IAuction(auction).initialize(project.token, bidCoin, msg.sender, params);
        IProjectToken token = IProjectToken(project.token);
        if (_isUncapped(auctionType)) token.grantRole(token.MINTER_ROLE(), auction);
        else token.mint(auction, params.numberOfTokensToBeDistributed);

        project.auction = auction;
        project.auctionType = auctionType;
        emit CreateAuctionEvent(msg.sender, auction, auctionType, projectHash);
    }

    // ---------------------------------------------------------------- admin actions

    function pauseAuction(bytes32 projectHash, uint256 pauseSeconds) external onlyAdmin {
        IAuction(_auctionOf(projectHash)).pauseAuction(pauseSeconds);
    }

    function forceFinishAuction(bytes32 projectHash) external onlyAdmin {
        IAuction(_auctionOf(projectHash)).forceFinish();
    }

    /// @notice Needs two admins; auctions already created keep the bid coin they were created with.
    function setBidCoin(address newBidCoin) external {
        if (newBidCoin.code.length == 0) revert InvalidAddress();
        if (!_approve(keccak256(abi.encode(this.setBidCoin.selector, newBidCoin)))) return;
        bidCoin = newBidCoin;
        emit BidCoinChanged(newBidCoin);
    }

    /// @notice Needs two admins; only for an existing type, and only auctions created afterwards use it.
    function setImplementation(string calldata auctionType, address implementation) external {
        if (implementationOf[auctionType] == address(0)) revert UnknownAuctionType(auctionType);
        if (implementation.code.length == 0) revert InvalidAddress();
        if (!_approve(keccak256(abi.encode(this.setImplementation.selector, auctionType, implementation)))) return;
        implementationOf[auctionType] = implementation;
        emit ImplementationChanged(auctionType, implementation);
    }

    // ---------------------------------------------------------------- views

    function auctionTypes() external view returns (string[] memory) {
        return _auctionTypes;
    }

    /// @notice True once an auction exists for the project (a token alone does not count).
    function isAuctionCreated(bytes32 projectHash) external view returns (bool) {
        return projectTokens[projectHash].auction != address(0);
    }

    /// @notice True once the project's auction has left Off.
    function isAuctionStarted(bytes32 projectHash) external view returns (bool) {
        address auction = projectTokens[projectHash].auction;
        return auction != address(0) && IAuction(auction).getStatus() != IAuction.AuctionStatus.Off;
    }

    /// @notice The first `selectCount` projects among `hashes` (in the order given) whose auction is in `status`,
    ///         or that have an auction at all when `ignoreStatus`.
    /// @dev The first implementation's shape, entry for entry, because its web client reads this view: always
    ///      min(selectCount, hashes.length) entries; the first match fills the last slot, the next one the slot
    ///      before it, and slots left over stay zeroed at the front (the client drops entries whose
    ///      `auctionType` is empty).
    function getProjectSurfaceByStatus(
        bytes32[] calldata hashes,
        IAuction.AuctionStatus status,
        uint256 selectCount,
        bool ignoreStatus
    ) external view returns (ProjectSurface[] memory surfaces) {
        uint256 free = selectCount < hashes.length ? selectCount : hashes.length;
        surfaces = new ProjectSurface[](free);
        for (uint256 i = 0; i < hashes.length && free > 0; i++) {
            Project storage project = projectTokens[hashes[i]];
            if (project.auction == address(0)) continue;
            if (!ignoreStatus && IAuction(project.auction).getStatus() != status) continue;
            surfaces[--free] = _surfaceOf(project, hashes[i]);
        }
    }

    /// @notice Exactly one entry per hash given, in the same order (a repeated hash is repeated); a hash without
    ///         an auction gets a zeroed entry.
    /// @dev Web-client compatibility: its project page reads `getAllAuctionsByHashList([hash])[0].tokenName`,
    ///      also before the project has an auction, so the entry must exist even then.
    function getAllAuctionsByHashList(
        bytes32[] calldata hashes
    ) external view returns (ProjectSurface[] memory surfaces) {
        surfaces = new ProjectSurface[](hashes.length);
        for (uint256 i = 0; i < hashes.length; i++) {
            Project storage project = projectTokens[hashes[i]];
            if (project.auction != address(0)) surfaces[i] = _surfaceOf(project, hashes[i]);
        }
    }

    // ---------------------------------------------------------------- internals

    function _surfaceOf(Project storage project, bytes32 projectHash) private view returns (ProjectSurface memory) {
        IERC20Metadata token = IERC20Metadata(project.token);
        return ProjectSurface(project.auction, token.name(), token.symbol(), project.auctionType, projectHash);
    }

    function _auctionOf(bytes32 projectHash) private view returns (address auction) {
        auction = projectTokens[projectHash].auction;
        if (auction == address(0)) revert AuctionNotCreated(projectHash);
    }

    function _isUncapped(string calldata auctionType) private pure returns (bool) {
        return keccak256(bytes(auctionType)) == keccak256("UncappedAuction");
    }

    function _isAdmin(address account) internal view override returns (bool) {
        return registry.hasRole(registry.ADMIN_ROLE(), account);
    }
}
